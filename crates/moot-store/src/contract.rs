//! Checks both stores run against the parts of the [`Store`] contract they share (tests only).

use crate::error::StoreError;
use crate::records::{BenchItemRecord, BenchRecord, RunRecord, RunStatus, ValidationRecord};
use crate::store::Store;

/// Checks a store against the cache part of the [`Store`] contract.
#[cfg(test)]
pub(crate) async fn check_cache_contract(store: &dyn Store) {
    assert_eq!(store.cache_get("k").await.unwrap(), None);
    store
        .cache_put("k", &serde_json::json!({"text": "first"}))
        .await
        .unwrap();
    store
        .cache_put("k", &serde_json::json!({"text": "second"}))
        .await
        .unwrap();
    assert_eq!(
        store.cache_get("k").await.unwrap(),
        Some(serde_json::json!({"text": "first"}))
    );
    assert_eq!(store.cache_get("other").await.unwrap(), None);
    // Trimming keeps the newest.
    for n in 0..5 {
        store
            .cache_put(&format!("t{n}"), &serde_json::json!(n))
            .await
            .unwrap();
    }
    assert_eq!(store.cache_trim(10).await.unwrap(), 0);
    assert_eq!(store.cache_trim(3).await.unwrap(), 3);
    for (key, kept) in [
        ("k", false),
        ("t0", false),
        ("t1", false),
        ("t2", true),
        ("t4", true),
    ] {
        assert_eq!(store.cache_get(key).await.unwrap().is_some(), kept, "{key}");
    }
    assert_eq!(store.cache_trim(0).await.unwrap(), 3);
    assert_eq!(store.cache_get("t4").await.unwrap(), None);
}

/// A run just started, for contract checks that need one to hang records on.
#[cfg(test)]
fn running_run(id: &str) -> RunRecord {
    RunRecord {
        id: id.into(),
        created_at: "t".into(),
        question: "q".into(),
        protocol: "som".into(),
        rule: "majority-last".into(),
        spec: serde_json::json!({}),
        config: serde_json::json!({}),
        status: RunStatus::Running,
        answer: None,
        finished_at: None,
    }
}

/// Checks a store against the benchmark part of the [`Store`] contract; both implementations run it.
#[cfg(test)]
pub(crate) async fn check_bench_contract(store: &dyn Store) {
    store.create_run(&running_run("r1")).await.unwrap();
    let bench = BenchRecord {
        name: "b1".into(),
        created_at: "t".into(),
        dataset: "gsm8k".into(),
        protocols: vec!["som".into(), "cot".into()],
        limit: Some(2),
        seed: 7,
        config: serde_json::json!({"debate": {"rounds": 1}}),
    };
    assert!(matches!(
        store.bench("b1").await,
        Err(StoreError::BenchNotFound(_))
    ));
    store.create_bench(&bench).await.unwrap();
    assert_eq!(store.list_benches().await.unwrap(), vec![bench.clone()]);
    assert!(matches!(
        store.create_bench(&bench).await,
        Err(StoreError::BenchExists(_))
    ));
    assert_eq!(store.bench("b1").await.unwrap(), bench);
    let item = |protocol: &str, id: &str, position: u32| BenchItemRecord {
        bench: "b1".into(),
        protocol: protocol.into(),
        item_id: id.into(),
        position,
        gold: "18".into(),
        run_id: "r1".into(),
    };
    for i in [
        item("cot", "gsm8k/9", 1),
        item("som", "gsm8k/9", 1),
        item("som", "gsm8k/3", 0),
        item("cot", "gsm8k/3", 0),
    ] {
        store.record_bench_item(&i).await.unwrap();
    }
    // Recording a link again replaces it.
    store
        .record_bench_item(&item("som", "gsm8k/3", 0))
        .await
        .unwrap();
    let items = store.bench_items("b1").await.unwrap();
    assert_eq!(
        items,
        vec![
            item("som", "gsm8k/3", 0),
            item("som", "gsm8k/9", 1),
            item("cot", "gsm8k/3", 0),
            item("cot", "gsm8k/9", 1),
        ],
        "by the benchmark's protocol order, then position"
    );
    assert!(store.bench_items("nope").await.unwrap().is_empty());
}

/// Checks a store against the validation part of the [`Store`] contract; both implementations
/// run it.
#[cfg(test)]
pub(crate) async fn check_validation_contract(store: &dyn Store) {
    store.create_run(&running_run("v1")).await.unwrap();
    let check = |answer: &str, check: &str, verdict: &str| ValidationRecord {
        run_id: "v1".into(),
        answer: answer.into(),
        check: check.into(),
        verdict: verdict.into(),
        detail: String::new(),
        elapsed_ms: 42,
        checked_at: "t".into(),
    };
    assert!(store.validations("v1").await.unwrap().is_empty());
    for v in [
        check("def f(): return 2", "tests", "failed"),
        check("def f(): return 1", "tests", "failed"),
        check("def f(): return 1", "syntax", "passed"),
    ] {
        store.record_validation(&v).await.unwrap();
    }
    // Checking again replaces the row.
    store
        .record_validation(&check("def f(): return 1", "tests", "passed"))
        .await
        .unwrap();
    assert_eq!(
        store.validations("v1").await.unwrap(),
        vec![
            check("def f(): return 1", "syntax", "passed"),
            check("def f(): return 1", "tests", "passed"),
            check("def f(): return 2", "tests", "failed"),
        ]
    );
    assert!(store.validations("other").await.unwrap().is_empty());
}

/// Checks a store against the run-listing part of the [`Store`] contract (filters and paging);
/// both implementations run it.
#[cfg(test)]
pub(crate) async fn check_list_contract(store: &dyn Store) {
    use crate::records::RunFilter;
    let runs = [
        ("a", "2026-11-21T10:00:00Z", "som", Some("408")),
        ("b", "2026-11-22T09:00:00Z", "free-mad-n", Some("Paris")),
        ("c", "2026-11-22T23:59:59Z", "som", None),
        ("d", "2026-11-23T00:00:00Z", "som", Some("1408")),
    ];
    for (id, at, protocol, answer) in runs {
        let mut run = running_run(id);
        run.created_at = at.into();
        run.protocol = protocol.into();
        store.create_run(&run).await.unwrap();
        if answer.is_some() {
            store
                .finish_run(id, RunStatus::Done, answer, "t")
                .await
                .unwrap();
        }
    }
    let ids = |runs: Vec<RunRecord>| runs.into_iter().map(|r| r.id).collect::<Vec<_>>();
    let all = RunFilter::newest(10);
    assert_eq!(
        ids(store.list_runs(&all).await.unwrap()),
        ["d", "c", "b", "a"]
    );
    let page = RunFilter {
        offset: 1,
        limit: 2,
        ..all.clone()
    };
    assert_eq!(ids(store.list_runs(&page).await.unwrap()), ["c", "b"]);
    let som = RunFilter {
        protocol: Some("som".into()),
        ..all.clone()
    };
    assert_eq!(ids(store.list_runs(&som).await.unwrap()), ["d", "c", "a"]);
    let answer = RunFilter {
        answer: Some("408".into()),
        ..all.clone()
    };
    assert_eq!(ids(store.list_runs(&answer).await.unwrap()), ["d", "a"]);
    let paris = RunFilter {
        answer: Some("paRIS".into()),
        ..all.clone()
    };
    assert_eq!(ids(store.list_runs(&paris).await.unwrap()), ["b"]);
    // A day as both bounds: that whole day.
    let day = RunFilter {
        from: Some("2026-11-22".into()),
        to: Some("2026-11-22".into()),
        ..all.clone()
    };
    assert_eq!(ids(store.list_runs(&day).await.unwrap()), ["c", "b"]);
    for filter in [&all, &page, &som, &answer, &paris, &day] {
        let listed = store.list_runs(filter).await.unwrap();
        assert!(listed.iter().all(|r| filter.matches(r)), "{filter:?}");
    }
}
