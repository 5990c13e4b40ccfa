//! Checks both stores run against the parts of the [`Store`] contract they share (tests only).

use crate::error::StoreError;
use crate::records::{
    BenchItemRecord, BenchJobRecord, BenchRecord, CallRecord, JobState, RunRecord, RunStatus,
    ValidationRecord, WorkerRecord,
};
use crate::store::Store;

/// Checks a store against the cache part of the [`Store`] contract.
#[cfg(test)]
pub(crate) async fn check_cache_conformance(store: &dyn Store) {
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
pub(crate) fn running_run(id: &str) -> RunRecord {
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
        silent_ms: None,
        owner: None,
        fork: None,
    }
}

/// Checks a store against the benchmark part of the [`Store`] contract; both implementations run it.
#[cfg(test)]
pub(crate) async fn check_bench_conformance(store: &dyn Store) {
    store.create_run(&running_run("r1")).await.unwrap();
    let bench = BenchRecord {
        name: "b1".into(),
        created_at: "t".into(),
        dataset: "gsm8k".into(),
        protocols: vec!["som".into(), "cot".into()],
        limit: Some(2),
        seed: 7,
        config: serde_json::json!({"debate": {"rounds": 1}}),
        fork: None,
        left_out: Some(crate::LeftOut {
            of: 3,
            items: vec![crate::LeftOutItem {
                id: "gsm8k/1".into(),
                place: "test.jsonl line 2".into(),
                problem: "gold does not parse as numeric".into(),
                message: "test.jsonl line 2: gold answer \"None\" from field `answer` does not parse as numeric".into(),
            }],
        }),
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

    // The version moves with the debates, and only with them (a benchmark of its own: the
    // stores' own tests go on with `b1` as it is).
    store.create_run(&running_run("rv1")).await.unwrap();
    store
        .create_bench(&BenchRecord {
            name: "bv".into(),
            ..bench.clone()
        })
        .await
        .unwrap();
    let link = |id: &str, position: u32, run: &str| BenchItemRecord {
        bench: "bv".into(),
        run_id: run.into(),
        ..item("som", id, position)
    };
    store
        .record_bench_item(&link("gsm8k/1", 0, "rv1"))
        .await
        .unwrap();
    let version = store.bench_version("bv").await.unwrap();
    assert_eq!(store.bench_version("bv").await.unwrap(), version);
    store
        .finish_run("rv1", RunStatus::Done, Some("18"), "t2")
        .await
        .unwrap();
    let finished = store.bench_version("bv").await.unwrap();
    assert_ne!(finished, version, "a debate finished");
    store
        .finish_run("rv1", RunStatus::Done, Some("19 or so"), "t2")
        .await
        .unwrap();
    let redecided = store.bench_version("bv").await.unwrap();
    assert_ne!(redecided, finished, "a debate re-decided");
    store.create_run(&running_run("rv2")).await.unwrap();
    store
        .record_bench_item(&link("gsm8k/2", 1, "rv2"))
        .await
        .unwrap();
    assert_ne!(
        store.bench_version("bv").await.unwrap(),
        redecided,
        "a debate linked"
    );
    assert_eq!(store.bench_version("nope").await.unwrap(), "0:0:0::0");
}

/// Checks a store against the validation part of the [`Store`] contract; both implementations
/// run it.
#[cfg(test)]
pub(crate) async fn check_validation_conformance(store: &dyn Store) {
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
pub(crate) async fn check_list_conformance(store: &dyn Store) {
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
    // A benchmark's debate is left out when only the runs outside benchmarks are asked for.
    store
        .create_bench(&BenchRecord {
            name: "listed".into(),
            created_at: "2026-11-22T00:00:00Z".into(),
            dataset: "gsm8k".into(),
            protocols: vec!["som".into()],
            limit: None,
            seed: 1,
            config: serde_json::json!({}),
            fork: None,
            left_out: None,
        })
        .await
        .unwrap();
    store
        .record_bench_item(&BenchItemRecord {
            bench: "listed".into(),
            protocol: "som".into(),
            item_id: "i1".into(),
            position: 0,
            gold: "1".into(),
            run_id: "c".into(),
        })
        .await
        .unwrap();
    let outside = RunFilter {
        outside_benches: true,
        ..som.clone()
    };
    assert_eq!(ids(store.list_runs(&outside).await.unwrap()), ["d", "a"]);
    assert_eq!(ids(store.list_runs(&som).await.unwrap()), ["d", "c", "a"]);
}

/// A call of run `run` with every field set, answered (`text`) or not.
#[cfg(test)]
pub(crate) fn full_call(run: &str, round: u32, agent: u32, text: Option<&str>) -> CallRecord {
    CallRecord {
        run_id: run.into(),
        round,
        agent,
        slot: "answer".into(),
        agent_id: format!("a{agent}"),
        backend: "scripted".into(),
        mode: "critique".into(),
        template: "conformity".into(),
        template_hash: "h".into(),
        messages: serde_json::json!([{"role": "user", "content": "q"}]),
        peers: vec![1, 2],
        response_text: text.map(String::from),
        answer: text.map(|_| "7".into()),
        error: text.is_none().then(|| "deadline".into()),
        skipped: false,
        finish: text.map(|_| "stop".into()),
        input_tokens: 10,
        output_tokens: 5,
        processed_input_tokens: Some(4),
        // Written to a prompt cache when answered; unknown (not reported) otherwise.
        cache_write_input_tokens: text.map(|_| 3),
        logprob_tokens: Some(5),
        logprob_mean: Some(-0.25),
        logprob_min: Some(-1.5),
        perplexity: Some(1.284),
        latency_ms: 12,
        recorded_at: "2026-11-21T10:00:01Z".into(),
        notes: serde_json::json!({"ncomm": 2}),
        ncomm: 2,
        cached: false,
        retries: serde_json::json!([{"error": "HTTP 503: busy", "class": "transient", "wait_ms": 500}]),
        request_key: Some(format!("k-{round}-{agent}")),
        reused_from: None,
    }
}

/// Checks a store against the run, call and decision part of the [`Store`] contract.
#[cfg(test)]
pub(crate) async fn check_call_conformance(store: &dyn Store) {
    use crate::records::{DecisionRecord, RunFilter};
    store.create_run(&running_run("c1")).await.unwrap();
    let answered = full_call("c1", 0, 1, Some("Final answer: 7"));
    let missing = full_call("c1", 0, 0, None);
    let judge = CallRecord {
        slot: "judge:0".into(),
        ..full_call("c1", 0, 1, Some("<label>YES</label>"))
    };
    let skipped = CallRecord {
        round: 1,
        skipped: true,
        response_text: None,
        answer: None,
        error: Some("s2-mad: every peer agrees".into()),
        notes: serde_json::json!({"skipped": "s2-mad: every peer agrees", "ncomm": 0}),
        ncomm: 0,
        request_key: None,
        ..full_call("c1", 1, 1, None)
    };
    for c in [&answered, &missing, &judge, &skipped] {
        store.record_call(c).await.unwrap();
    }
    assert_eq!(
        store.calls("c1").await.unwrap(),
        vec![
            missing.clone(),
            answered.clone(),
            judge.clone(),
            skipped.clone()
        ],
        "every field reads back, by round, agent, then slot"
    );
    // A completed call is recorded once: a second recording (a worker that lost its lease
    // finishing the same call) leaves the first.
    let again = CallRecord {
        response_text: Some("Final answer: 8".into()),
        answer: Some("8".into()),
        output_tokens: 99,
        ..answered.clone()
    };
    store.record_call(&again).await.unwrap();
    // A call that got no response may be recorded again with one.
    let now_answered = full_call("c1", 0, 0, Some("Final answer: 7"));
    store.record_call(&now_answered).await.unwrap();
    let calls = store.calls("c1").await.unwrap();
    assert_eq!(calls.len(), 4);
    assert_eq!(calls[0], now_answered);
    assert_eq!(calls[1], answered, "the first completed recording stays");
    // A call placed outside any debate's bounds is refused, with the run named.
    for (round, agent) in [(crate::records::MAX_STORED_ROUND + 1, 0), (0, 5_000)] {
        let far = full_call("c1", round, agent, Some("x"));
        let e = store.record_call(&far).await.unwrap_err();
        assert!(matches!(e, StoreError::OutOfBounds { .. }), "{e}");
        assert!(e.to_string().starts_with("run c1: "), "{e}");
        let batch = crate::records::CallBatch {
            calls: vec![far],
            cache: vec![],
        };
        assert!(store.record_batch(&batch).await.is_err());
    }
    assert_eq!(store.calls("c1").await.unwrap().len(), 4);
    // A call of a run the store does not have is refused.
    assert!(store
        .record_call(&full_call("nope", 0, 0, Some("x")))
        .await
        .is_err());
    let decision = |answer: &str| DecisionRecord {
        run_id: "c1".into(),
        rule: "free-mad".into(),
        answer: Some(answer.into()),
        decision: crate::DecisionJson::from_value(&serde_json::json!({"scores": {answer: 20.0}})),
        decided_at: "t".into(),
    };
    store.record_decision(&decision("8")).await.unwrap();
    store.record_decision(&decision("7")).await.unwrap();
    assert_eq!(store.decisions("c1").await.unwrap(), vec![decision("7")]);
    store
        .finish_run("c1", RunStatus::Done, Some("7"), "t2")
        .await
        .unwrap();
    let run = store.run("c1").await.unwrap();
    assert_eq!(
        (
            run.status,
            run.answer.as_deref(),
            run.finished_at.as_deref()
        ),
        (RunStatus::Done, Some("7"), Some("t2"))
    );
    assert_eq!(
        store.list_runs(&RunFilter::newest(10)).await.unwrap().len(),
        1
    );
    assert!(matches!(
        store.run("nope").await,
        Err(StoreError::RunNotFound(_))
    ));
    assert!(matches!(
        store.finish_run("nope", RunStatus::Done, None, "t").await,
        Err(StoreError::RunNotFound(_))
    ));
}

/// Checks a store against the following part of the [`Store`] contract: calls come back in the
/// order they were written, from where a follower stands, and a run's owner is heard from.
#[cfg(test)]
pub(crate) async fn check_follow_conformance(store: &dyn Store) {
    use crate::records::{CallBatch, CallCursor};
    store.create_run(&running_run("f1")).await.unwrap();
    let start = CallCursor::start();
    assert!(store
        .calls_after("f1", &start, 10)
        .await
        .unwrap()
        .is_empty());
    let places = |found: &[(CallCursor, CallRecord)]| -> Vec<(u32, u32)> {
        found.iter().map(|(_, c)| (c.round, c.agent)).collect()
    };
    // A round written as one batch, then a later call, then an earlier place written last.
    store
        .record_batch(&CallBatch {
            calls: vec![
                full_call("f1", 0, 1, Some("Final answer: 1")),
                full_call("f1", 0, 0, Some("Final answer: 2")),
            ],
            cache: vec![],
        })
        .await
        .unwrap();
    store
        .record_call(&full_call("f1", 1, 0, Some("Final answer: 3")))
        .await
        .unwrap();
    store
        .record_call(&full_call("f1", 0, 2, None))
        .await
        .unwrap();
    let first = store.calls_after("f1", &start, 1).await.unwrap();
    assert_eq!(places(&first), vec![(0, 0)], "one at a time when asked so");
    let rest = store.calls_after("f1", &first[0].0, 10).await.unwrap();
    assert_eq!(
        places(&rest),
        vec![(0, 1), (1, 0), (0, 2)],
        "in the order written (a batch by place), not by place"
    );
    assert_eq!(rest[2].1, full_call("f1", 0, 2, None), "the whole call");
    let last = rest[2].0.clone();
    assert!(store.calls_after("f1", &last, 10).await.unwrap().is_empty());
    // A completed call written again is not news; a missing one answered is.
    store
        .record_call(&full_call("f1", 0, 0, Some("Final answer: 9")))
        .await
        .unwrap();
    assert!(store.calls_after("f1", &last, 10).await.unwrap().is_empty());
    let answered = full_call("f1", 0, 2, Some("Final answer: 4"));
    store.record_call(&answered).await.unwrap();
    let news = store.calls_after("f1", &last, 10).await.unwrap();
    assert_eq!(news.len(), 1);
    assert_eq!(news[0].1, answered);
    assert!(news[0].0 > last);
    assert!(store
        .calls_after("other", &start, 10)
        .await
        .unwrap()
        .is_empty());
    // The owner of a new run was just heard from; beats keep it so; a finished run is not
    // interrupted, whatever its silence.
    let run = store.run("f1").await.unwrap();
    let silent = run.silent_ms.expect("a new run has a heartbeat");
    assert!((0..5_000).contains(&silent), "silent for {silent} ms");
    assert!(!run.interrupted());
    assert_eq!(run.shown_status(), "running");
    store.beat_run("f1").await.unwrap();
    store.beat_run("nope").await.unwrap();
    let listed = store
        .list_runs(&crate::records::RunFilter::newest(5))
        .await
        .unwrap();
    assert!(listed[0].silent_ms.is_some_and(|ms| ms < 5_000));
    store
        .finish_run("f1", RunStatus::Done, Some("4"), "t")
        .await
        .unwrap();
    assert_eq!(store.run("f1").await.unwrap().shown_status(), "done");
}

/// Checks a store's shared rate allowances: a burst is taken, the next take waits for its
/// share, keys are apart, takes at once never overdraw, and an arrival time further ahead than
/// any take leaves one is reset, not waited on, while one a stricter limit left is waited on.
#[cfg(test)]
pub(crate) async fn check_allowance_conformance(store: std::sync::Arc<dyn Store>) {
    use crate::records::Allowance;
    use std::time::Duration;
    // Ten seconds a unit, a burst of three: the numbers dwarf the time the test takes.
    let (cost, tolerance) = (10_000_000, 30_000_000);
    for n in 0..3 {
        assert_eq!(
            store.take_allowance("k", cost, tolerance).await.unwrap(),
            Allowance::Taken,
            "take {n}"
        );
    }
    let Allowance::Wait(wait) = store.take_allowance("k", cost, tolerance).await.unwrap() else {
        panic!("the burst is spent");
    };
    assert!(
        (Duration::from_secs(9)..=Duration::from_secs(10)).contains(&wait),
        "{wait:?}"
    );
    assert_eq!(
        store
            .take_allowance("other", cost, tolerance)
            .await
            .unwrap(),
        Allowance::Taken
    );
    let takes: Vec<_> = (0..12)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.take_allowance("race", cost, 5 * cost).await })
        })
        .collect();
    let mut taken = 0;
    for t in takes {
        if t.await.unwrap().unwrap() == Allowance::Taken {
            taken += 1;
        }
    }
    assert_eq!(taken, 5, "twelve takes at once from a burst of five");
    // Issue 42, LOW 9: an arrival time 250,000 years ahead (a clock stepped back, a row
    // written by hand) is not waited on: the take resets it and goes ahead.
    let far = 8_000_000_000_000_000_000;
    assert_eq!(
        store
            .take_allowance("stepped", far, i64::MAX)
            .await
            .unwrap(),
        Allowance::Taken
    );
    let Allowance::Reset { ahead } = store
        .take_allowance("stepped", cost, tolerance)
        .await
        .unwrap()
    else {
        panic!("a time 250,000 years ahead is waited on");
    };
    assert!(
        ahead > Duration::from_micros(far as u64 - 60_000_000),
        "{ahead:?}"
    );
    // Reset to now plus the cost: the burst's second take fits, and the limit holds again.
    assert_eq!(
        store
            .take_allowance("stepped", cost, tolerance)
            .await
            .unwrap(),
        Allowance::Taken
    );
    // A stricter limit on the same key (another process's configuration) leaves its time
    // further ahead than this one's burst, but within a minute's slack: waited on.
    assert_eq!(
        store
            .take_allowance("stricter", 50_000_000, 60_000_000)
            .await
            .unwrap(),
        Allowance::Taken
    );
    let Allowance::Wait(wait) = store
        .take_allowance("stricter", cost, tolerance)
        .await
        .unwrap()
    else {
        panic!("a time a stricter limit left is not suspect");
    };
    assert!(
        (Duration::from_secs(29)..=Duration::from_secs(30)).contains(&wait),
        "{wait:?}"
    );
}

/// A benchmark named `name` with `jobs` planned jobs (`q0`, `q1`, … under `som`).
#[cfg(test)]
async fn planned_bench(store: &dyn Store, name: &str, jobs: u32) -> Vec<BenchJobRecord> {
    store
        .create_bench(&BenchRecord {
            name: name.into(),
            created_at: "t".into(),
            dataset: "gsm8k".into(),
            protocols: vec!["som".into()],
            limit: None,
            seed: 1,
            config: serde_json::json!({}),
            fork: None,
            left_out: None,
        })
        .await
        .unwrap();
    // Planned out of order: claims follow `seq`, not insertion.
    let mut planned: Vec<BenchJobRecord> = (0..jobs)
        .rev()
        .map(|i| {
            BenchJobRecord::pending(
                name,
                "som",
                &format!("q{i}"),
                i,
                u64::from(i),
                serde_json::json!({"id": format!("q{i}"), "gold": i}),
            )
        })
        .collect();
    assert_eq!(store.plan_jobs(&planned).await.unwrap(), u64::from(jobs));
    planned.reverse();
    planned
}

/// Checks a store against the worked-benchmark part of the [`Store`] contract: planning,
/// claiming in order, leases, takeover, finishing, counts and workers.
#[cfg(test)]
pub(crate) async fn check_job_conformance(store: &dyn Store) {
    use std::time::Duration;
    let long = Duration::from_secs(600);
    let planned = planned_bench(store, "w1", 3).await;
    // Planning again adds nothing and changes nothing.
    assert_eq!(store.plan_jobs(&planned).await.unwrap(), 0);
    assert_eq!(store.bench_jobs("w1").await.unwrap(), planned);
    let counts = store.job_counts("w1").await.unwrap();
    assert_eq!((counts.pending, counts.total()), (3, 3));
    assert!(counts.now_ms > 1_700_000_000_000, "{counts:?}");
    let first = store.claim_job("w1", "alice", long).await.unwrap().unwrap();
    assert_eq!(
        (first.item_id.as_str(), first.state),
        ("q0", JobState::Running)
    );
    assert_eq!(first.worker.as_deref(), Some("alice"));
    assert_eq!(
        (first.previous_worker.as_deref(), first.attempts),
        (None, 1)
    );
    assert_eq!(first.item, serde_json::json!({"id": "q0", "gold": 0}));
    assert!(first.lease_until.unwrap() >= counts.now_ms + 590_000);
    let second = store.claim_job("w1", "bob", long).await.unwrap().unwrap();
    assert_eq!(second.item_id, "q1");
    // Only the holder renews or finishes.
    assert!(store.renew_job(&first, "alice", long).await.unwrap());
    assert!(!store.renew_job(&first, "bob", long).await.unwrap());
    assert!(!store
        .finish_job(&first, "bob", JobState::Done, None)
        .await
        .unwrap());
    assert!(store
        .finish_job(&first, "alice", JobState::Done, None)
        .await
        .unwrap());
    assert!(
        !store.renew_job(&first, "alice", long).await.unwrap(),
        "finished"
    );
    // Bob's lease runs out (a lease of 0 ms): the next claim takes his job over before the
    // pending one after it, since it comes first in the plan.
    assert!(store
        .renew_job(&second, "bob", Duration::ZERO)
        .await
        .unwrap());
    tokio::time::sleep(Duration::from_millis(20)).await;
    let counts = store.job_counts("w1").await.unwrap();
    assert_eq!(
        (counts.pending, counts.running, counts.expired, counts.done),
        (1, 0, 1, 1)
    );
    let taken = store.claim_job("w1", "carol", long).await.unwrap().unwrap();
    assert_eq!(taken.item_id, "q1");
    assert_eq!(taken.previous_worker.as_deref(), Some("bob"));
    assert_eq!(taken.attempts, 2);
    // Bob comes back: the job is no longer his.
    assert!(!store.renew_job(&second, "bob", long).await.unwrap());
    assert!(!store
        .finish_job(&second, "bob", JobState::Done, None)
        .await
        .unwrap());
    assert!(store
        .finish_job(&taken, "carol", JobState::Failed, Some("model unreachable"))
        .await
        .unwrap());
    let third = store.claim_job("w1", "alice", long).await.unwrap().unwrap();
    assert_eq!(third.item_id, "q2");
    assert_eq!(store.claim_job("w1", "alice", long).await.unwrap(), None);
    assert_eq!(store.claim_job("other", "alice", long).await.unwrap(), None);
    let counts = store.job_counts("w1").await.unwrap();
    assert_eq!(
        (counts.running, counts.done, counts.failed, counts.settled()),
        (1, 1, 1, false)
    );
    store
        .finish_job(&third, "alice", JobState::Done, None)
        .await
        .unwrap();
    assert!(store.job_counts("w1").await.unwrap().settled());
    let jobs = store.bench_jobs("w1").await.unwrap();
    assert_eq!(jobs[1].error.as_deref(), Some("model unreachable"));
    assert_eq!(jobs[1].state, JobState::Failed);
    assert_eq!(store.job_counts("none").await.unwrap().total(), 0);
    // Workers: the store's clock starts and sees them.
    let worker = |name: &str, debates: u64, exited: bool| WorkerRecord {
        bench: "w1".into(),
        worker: name.into(),
        started_at: 0,
        last_seen: 0,
        debates,
        calls: debates * 3,
        output_tokens: debates * 100,
        exited,
        owner: None,
    };
    store
        .record_worker(&worker("alice", 0, false))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    store.record_worker(&worker("bob", 1, false)).await.unwrap();
    store
        .record_worker(&worker("alice", 2, true))
        .await
        .unwrap();
    let workers = store.bench_workers("w1").await.unwrap();
    assert_eq!(
        workers
            .iter()
            .map(|w| (w.worker.as_str(), w.debates, w.calls, w.exited))
            .collect::<Vec<_>>(),
        [("alice", 2, 6, true), ("bob", 1, 3, false)]
    );
    assert!(workers[0].started_at > 1_700_000_000_000);
    assert!(workers[0].last_seen >= workers[0].started_at);
    // The store names the process that wrote the record: this one, which is not gone.
    assert!(workers[1]
        .owner
        .as_deref()
        .is_some_and(|o| o.ends_with(&format!("/{}", std::process::id()))));
    assert!(!workers[1].gone());
    assert!(store.bench_workers("none").await.unwrap().is_empty());
}

/// Checks that of many claims of one worker name at once exactly one wins, that a live holder
/// keeps it, and that an exited or silent holder's name can be taken again.
#[cfg(test)]
pub(crate) async fn check_worker_claims(store: std::sync::Arc<dyn Store>) {
    planned_bench(store.as_ref(), "w", 1).await;
    planned_bench(store.as_ref(), "v", 1).await;
    let lease = 60_000;
    let claims: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.claim_worker("w", "same", lease).await })
        })
        .collect();
    let mut won = 0;
    for c in claims {
        if c.await.unwrap().unwrap() {
            won += 1;
        }
    }
    assert_eq!(won, 1, "one of eight simultaneous claims wins");
    assert!(!store.claim_worker("w", "same", lease).await.unwrap());
    assert!(store.claim_worker("w", "other", lease).await.unwrap());
    assert!(store.claim_worker("v", "same", lease).await.unwrap());
    // An exited holder gives its name up; so does one not seen within the lease.
    let named = |workers: Vec<WorkerRecord>| {
        workers
            .into_iter()
            .find(|w| w.worker == "same")
            .expect("the worker")
    };
    let mut exited = named(store.bench_workers("w").await.unwrap());
    exited.exited = true;
    store.record_worker(&exited).await.unwrap();
    assert!(store.claim_worker("w", "same", lease).await.unwrap());
    tokio::time::sleep(std::time::Duration::from_millis(30)).await;
    assert!(store.claim_worker("w", "same", 10).await.unwrap());
    let w = named(store.bench_workers("w").await.unwrap());
    assert_eq!((w.debates, w.exited), (0, false));
}

/// Checks that workers claiming at the same time never get the same job: `tasks` claimers on
/// `store` until nothing is left, each job claimed exactly once.
#[cfg(test)]
pub(crate) async fn check_concurrent_claims(store: std::sync::Arc<dyn Store>, tasks: usize) {
    let jobs = 60;
    planned_bench(store.as_ref(), "race", jobs).await;
    let claimers = (0..tasks).map(|t| {
        let store = store.clone();
        tokio::spawn(async move {
            let mut mine = Vec::new();
            let lease = std::time::Duration::from_secs(600);
            while let Some(job) = store
                .claim_job("race", &format!("w{t}"), lease)
                .await
                .unwrap()
            {
                mine.push(job.item_id);
            }
            mine
        })
    });
    let mut claimed: Vec<String> = Vec::new();
    for c in claimers.collect::<Vec<_>>() {
        claimed.extend(c.await.unwrap());
    }
    claimed.sort();
    let mut expected: Vec<String> = (0..jobs).map(|i| format!("q{i}")).collect();
    expected.sort();
    assert_eq!(claimed, expected, "each job claimed once");
}

/// Checks a store against the batch part of the [`Store`] contract: a batch records its calls
/// and cache entries as one-by-one recording would, all or nothing; batches recorded at once
/// by concurrent tasks are all kept, and one batch's error fails only that batch.
#[cfg(test)]
pub(crate) async fn check_batch_conformance(store: std::sync::Arc<dyn Store>) {
    use crate::records::CallBatch;
    store.create_run(&running_run("b1")).await.unwrap();
    store.create_run(&running_run("b2")).await.unwrap();
    let batch = CallBatch {
        calls: vec![
            full_call("b1", 0, 1, Some("Final answer: 7")),
            full_call("b1", 0, 0, None),
            full_call("b2", 0, 0, Some("Final answer: 7")),
        ],
        cache: vec![("bk".into(), serde_json::json!({"text": "cached"}))],
    };
    store.record_batch(&batch).await.unwrap();
    assert_eq!(
        store.calls("b1").await.unwrap(),
        vec![batch.calls[1].clone(), batch.calls[0].clone()]
    );
    assert_eq!(
        store.calls("b2").await.unwrap(),
        vec![batch.calls[2].clone()]
    );
    assert_eq!(
        store.cache_get("bk").await.unwrap(),
        Some(serde_json::json!({"text": "cached"}))
    );
    // A completed call stays as first recorded; a missing one takes its response.
    let again = CallBatch {
        calls: vec![
            CallRecord {
                output_tokens: 99,
                ..full_call("b1", 0, 1, Some("Final answer: 8"))
            },
            full_call("b1", 0, 0, Some("Final answer: 9")),
        ],
        cache: vec![("bk".into(), serde_json::json!({"text": "later"}))],
    };
    store.record_batch(&again).await.unwrap();
    let calls = store.calls("b1").await.unwrap();
    assert_eq!(calls, vec![again.calls[1].clone(), batch.calls[0].clone()]);
    assert_eq!(
        store.cache_get("bk").await.unwrap(),
        Some(serde_json::json!({"text": "cached"}))
    );
    // A batch with a call of an unknown run is refused whole.
    let broken = CallBatch {
        calls: vec![
            full_call("b2", 1, 0, Some("x")),
            full_call("nope", 0, 0, Some("x")),
        ],
        cache: vec![("broken".into(), serde_json::json!(1))],
    };
    assert!(store.record_batch(&broken).await.is_err());
    assert_eq!(
        store.calls("b2").await.unwrap().len(),
        1,
        "nothing of it kept"
    );
    assert_eq!(store.cache_get("broken").await.unwrap(), None);
    // Batches recorded at the same moment (which SQLite commits together) are all kept, but
    // for the one naming an unknown run.
    let tasks = (0..16u32).map(|t| {
        let store = store.clone();
        tokio::spawn(async move {
            let run = if t == 5 { "nope" } else { "b2" };
            let batch = CallBatch {
                calls: vec![full_call(run, 2, t, Some("Final answer: 7"))],
                cache: vec![(format!("k{t}"), serde_json::json!(t))],
            };
            store.record_batch(&batch).await.is_ok()
        })
    });
    let mut written = Vec::new();
    for t in tasks.collect::<Vec<_>>() {
        written.push(t.await.unwrap());
    }
    assert_eq!(
        written,
        (0..16).map(|t| t != 5).collect::<Vec<_>>(),
        "only the batch of the unknown run fails"
    );
    let round2 = store.calls("b2").await.unwrap();
    assert_eq!(round2.iter().filter(|c| c.round == 2).count(), 15);
    assert_eq!(
        store.cache_get("k4").await.unwrap(),
        Some(serde_json::json!(4))
    );
    assert_eq!(store.cache_get("k5").await.unwrap(), None);
}

/// Checks a store against the outcome part of the [`Store`] contract: an outcome records its
/// decisions and finishes its run as one-by-one recording would, all or nothing; outcomes
/// recorded at once with other debates' batches are all kept, and one outcome's error fails
/// only that outcome.
#[cfg(test)]
pub(crate) async fn check_outcome_conformance(store: std::sync::Arc<dyn Store>) {
    use crate::records::{CallBatch, DecisionRecord, RunOutcome};
    fn decision(run: &str, rule: &str, answer: &str) -> DecisionRecord {
        DecisionRecord {
            run_id: run.into(),
            rule: rule.into(),
            answer: Some(answer.into()),
            decision: crate::DecisionJson::from_value(
                &serde_json::json!({"rule": rule, "scores": {answer: 1.5}}),
            ),
            decided_at: "t3".into(),
        }
    }
    fn outcome(run: &str, answer: &str) -> RunOutcome {
        RunOutcome {
            run_id: run.into(),
            status: RunStatus::Done,
            answer: Some(answer.into()),
            finished_at: "t3".into(),
            decisions: vec![
                decision(run, "majority-last", answer),
                decision(run, "free-mad", answer),
            ],
        }
    }
    store.create_run(&running_run("o1")).await.unwrap();
    // A decision recorded before (a resumed debate's) is replaced.
    store
        .record_decision(&decision("o1", "free-mad", "3"))
        .await
        .unwrap();
    store.record_outcome(outcome("o1", "7")).await.unwrap();
    assert_eq!(
        store.decisions("o1").await.unwrap(),
        vec![
            decision("o1", "free-mad", "7"),
            decision("o1", "majority-last", "7")
        ]
    );
    let run = store.run("o1").await.unwrap();
    assert_eq!(
        (
            run.status,
            run.answer.as_deref(),
            run.finished_at.as_deref()
        ),
        (RunStatus::Done, Some("7"), Some("t3"))
    );
    // The outcome of a run the store does not have is refused whole.
    let unknown = RunOutcome {
        decisions: vec![decision("nope", "free-mad", "7")],
        ..outcome("nope", "7")
    };
    assert!(matches!(
        store.record_outcome(unknown).await,
        Err(StoreError::RunNotFound(_))
    ));
    assert_eq!(store.decisions("nope").await.unwrap(), vec![]);
    // Outcomes and batches recorded at the same moment (which SQLite commits together) are all
    // kept, but for the outcome of the unknown run.
    for t in 0..12 {
        store
            .create_run(&running_run(&format!("o{}", t + 10)))
            .await
            .unwrap();
    }
    let tasks = (0..12u32).map(|t| {
        let store = store.clone();
        tokio::spawn(async move {
            let run = format!("o{}", t + 10);
            if t % 2 == 0 {
                let batch = CallBatch {
                    calls: vec![full_call(&run, 0, 0, Some("Final answer: 7"))],
                    cache: vec![],
                };
                store.record_batch(&batch).await.is_ok()
            } else {
                let run = if t == 7 { "nope".to_string() } else { run };
                store.record_outcome(outcome(&run, "7")).await.is_ok()
            }
        })
    });
    let mut written = Vec::new();
    for t in tasks.collect::<Vec<_>>() {
        written.push(t.await.unwrap());
    }
    assert_eq!(written, (0..12).map(|t| t != 7).collect::<Vec<_>>());
    for t in 0..12u32 {
        let run = format!("o{}", t + 10);
        let finished = store.run(&run).await.unwrap().status == RunStatus::Done;
        assert_eq!(finished, t % 2 == 1 && t != 7, "{run}");
        let decided = store.decisions(&run).await.unwrap().len();
        assert_eq!(decided, if finished { 2 } else { 0 }, "{run}");
        let calls = store.calls(&run).await.unwrap().len();
        assert_eq!(calls, usize::from(t % 2 == 0), "{run}");
    }
}

/// Checks the parts of the batch contract that multi-row statements could break: one batch
/// recording the same call twice (each recording applies in order) and batches longer than
/// one statement holds, and looking up many cached responses at once.
#[cfg(test)]
pub(crate) async fn check_large_batch_conformance(store: &dyn Store) {
    use crate::records::CallBatch;
    store.create_run(&running_run("l1")).await.unwrap();
    let unanswered = full_call("l1", 0, 0, None);
    let answered = full_call("l1", 0, 0, Some("Final answer: 7"));
    let later = full_call("l1", 0, 0, Some("Final answer: 8"));
    let twice = CallBatch {
        calls: vec![unanswered, answered.clone(), later],
        cache: vec![
            ("dup".into(), serde_json::json!(1)),
            ("dup".into(), serde_json::json!(2)),
        ],
    };
    store.record_batch(&twice).await.unwrap();
    assert_eq!(store.calls("l1").await.unwrap(), vec![answered]);
    assert_eq!(
        store.cache_get("dup").await.unwrap(),
        Some(serde_json::json!(1))
    );
    let many = 1_203u32;
    let large = CallBatch {
        calls: (0..many)
            // A hundred agents a round (a debate has fewer than MAX_STORED_AGENTS).
            .map(|a| full_call("l1", 1 + a / 100, a % 100, Some("Final answer: 7")))
            .collect(),
        cache: (0..many)
            .map(|a| (format!("many{a}"), serde_json::json!(a)))
            .collect(),
    };
    store.record_batch(&large).await.unwrap();
    let stored = store.calls("l1").await.unwrap();
    assert_eq!(stored.len(), many as usize + 1);
    assert_eq!(stored.last(), large.calls.last());
    let mut keys: Vec<String> = (0..many).rev().map(|a| format!("many{a}")).collect();
    keys.insert(7, "absent".into());
    keys.push("many3".into());
    let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let found = store.cache_get_many(&key_refs).await.unwrap();
    assert_eq!(found.len(), keys.len(), "one answer per key, in order");
    for (key, value) in keys.iter().zip(&found) {
        let expected = key
            .strip_prefix("many")
            .and_then(|n| n.parse::<u32>().ok())
            .map(|n| serde_json::json!(n));
        assert_eq!(value, &expected, "{key}");
    }
    assert_eq!(store.cache_get_many(&[]).await.unwrap(), vec![]);
}

/// Checks a store against the whole-run part of the [`Store`] contract: a run is written with
/// its calls, decisions and checks as given, all or nothing (a record the store refuses, here
/// a check of a run it does not have, written last, leaves no trace of the run, and writing
/// it again without that record completes it); a run already there is never replaced; of
/// writers of one new run at the same moment exactly one writes it.
#[cfg(test)]
pub(crate) async fn check_whole_run_conformance(store: std::sync::Arc<dyn Store>) {
    use crate::records::{DecisionRecord, RunFilter, WholeRun};
    fn whole(id: &str) -> WholeRun {
        WholeRun {
            run: RunRecord {
                status: RunStatus::Done,
                answer: Some("7".into()),
                finished_at: Some("t3".into()),
                ..running_run(id)
            },
            calls: vec![
                full_call(id, 0, 0, Some("Final answer: 7")),
                full_call(id, 0, 1, None),
                full_call(id, 1, 0, Some("Final answer: 7")),
            ],
            decisions: ["majority-last", "free-mad"]
                .into_iter()
                .map(|rule| DecisionRecord {
                    run_id: id.into(),
                    rule: rule.into(),
                    answer: Some("7".into()),
                    decision: crate::DecisionJson::from_value(&serde_json::json!({"rule": rule})),
                    decided_at: "t3".into(),
                })
                .collect(),
            validations: vec![ValidationRecord {
                run_id: id.into(),
                answer: "7".into(),
                check: "syntax".into(),
                verdict: "passed".into(),
                detail: String::new(),
                elapsed_ms: 3,
                checked_at: "t3".into(),
            }],
        }
    }
    /// Asserts that `id` is stored exactly as `w` gives it.
    async fn stored_as(store: &dyn Store, id: &str, w: &WholeRun) {
        let run = store.run(id).await.unwrap();
        assert_eq!(
            (
                run.status,
                run.answer.as_deref(),
                run.finished_at.as_deref(),
                &run.question
            ),
            (RunStatus::Done, Some("7"), Some("t3"), &w.run.question)
        );
        let mut calls = w.calls.clone();
        calls.sort_by_key(|c| (c.round, c.agent));
        assert_eq!(store.calls(id).await.unwrap(), calls);
        let mut decisions = w.decisions.clone();
        decisions.sort_by(|a, b| a.rule.cmp(&b.rule));
        assert_eq!(store.decisions(id).await.unwrap(), decisions);
        assert_eq!(store.validations(id).await.unwrap(), w.validations);
    }
    let w1 = whole("w1");
    assert!(store.record_whole_run(&w1).await.unwrap());
    stored_as(store.as_ref(), "w1", &w1).await;
    // Written again, changed: refused as there already, and what is stored stays.
    let mut changed = whole("w1");
    changed.run.question = "another".into();
    changed.calls.truncate(1);
    changed.decisions.clear();
    assert!(!store.record_whole_run(&changed).await.unwrap());
    stored_as(store.as_ref(), "w1", &w1).await;
    // A record the store refuses, after the run, its calls and its decisions: nothing of it.
    let mut broken = whole("w2");
    broken.validations.push(ValidationRecord {
        run_id: "nope".into(),
        ..broken.validations[0].clone()
    });
    assert!(store.record_whole_run(&broken).await.is_err());
    assert!(matches!(
        store.run("w2").await,
        Err(StoreError::RunNotFound(_))
    ));
    assert_eq!(store.calls("w2").await.unwrap(), vec![]);
    assert_eq!(store.decisions("w2").await.unwrap(), vec![]);
    assert_eq!(store.validations("w2").await.unwrap(), vec![]);
    assert_eq!(
        store.list_runs(&RunFilter::newest(10)).await.unwrap().len(),
        1,
        "only w1"
    );
    // Written again as it should be: whole.
    let w2 = whole("w2");
    assert!(store.record_whole_run(&w2).await.unwrap());
    stored_as(store.as_ref(), "w2", &w2).await;
    // Writers of one new run at once: one writes it, the others find it there.
    let tasks: Vec<_> = (0..6)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.record_whole_run(&whole("w3")).await.unwrap() })
        })
        .collect();
    let mut written = 0;
    for t in tasks {
        written += usize::from(t.await.unwrap());
    }
    assert_eq!(written, 1);
    stored_as(store.as_ref(), "w3", &whole("w3")).await;
}

/// Every contract check above, on stores `fresh` makes (one per check, so they don't meet).
#[cfg(test)]
pub(crate) async fn check_whole_conformance<F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = std::sync::Arc<dyn Store>>,
{
    check_call_conformance(fresh().await.as_ref()).await;
    check_follow_conformance(fresh().await.as_ref()).await;
    check_bench_conformance(fresh().await.as_ref()).await;
    check_validation_conformance(fresh().await.as_ref()).await;
    check_list_conformance(fresh().await.as_ref()).await;
    check_cache_conformance(fresh().await.as_ref()).await;
    check_job_conformance(fresh().await.as_ref()).await;
    check_concurrent_claims(fresh().await, 6).await;
    check_worker_claims(fresh().await).await;
    check_batch_conformance(fresh().await).await;
    check_outcome_conformance(fresh().await).await;
    check_large_batch_conformance(fresh().await.as_ref()).await;
    check_allowance_conformance(fresh().await).await;
    check_whole_run_conformance(fresh().await).await;
    check_fork_conformance(fresh().await.as_ref()).await;
}

/// Checks a store against the lineage part of the [`Store`] contract: a fork's origin and its
/// reused calls read back, whether the fork was created or written whole (a copy), and
/// [`Store::forks_of`] lists a run's forks, oldest first.
#[cfg(test)]
pub(crate) async fn check_fork_conformance(store: &dyn Store) {
    use crate::records::{ForkOrigin, WholeRun};
    store.create_run(&running_run("parent")).await.unwrap();
    assert_eq!(store.run("parent").await.unwrap().fork, None);
    let origin = |round: u32, intervention: serde_json::Value| ForkOrigin {
        parent: "parent".into(),
        round,
        intervention,
    };
    let null = origin(1, serde_json::json!({"kind": "null"}));
    let said = origin(
        2,
        serde_json::json!({"kind": "say", "agent": 1, "text": "Final answer: 9"}),
    );
    let first = RunRecord {
        created_at: "t1".into(),
        fork: Some(null.clone()),
        ..running_run("fork-a")
    };
    store.create_run(&first).await.unwrap();
    let reused = CallRecord {
        input_tokens: 0,
        output_tokens: 0,
        reused_from: Some("parent".into()),
        ..full_call("fork-b", 0, 0, Some("Final answer: 7"))
    };
    let copied = WholeRun {
        run: RunRecord {
            created_at: "t2".into(),
            status: RunStatus::Done,
            answer: Some("7".into()),
            fork: Some(said.clone()),
            ..running_run("fork-b")
        },
        calls: vec![reused.clone()],
        decisions: vec![],
        validations: vec![],
    };
    assert!(store.record_whole_run(&copied).await.unwrap());
    assert_eq!(store.run("fork-a").await.unwrap().fork, Some(null.clone()));
    assert_eq!(store.run("fork-b").await.unwrap().fork, Some(said.clone()));
    assert_eq!(store.calls("fork-b").await.unwrap(), vec![reused]);
    let forks = store.forks_of("parent", 10).await.unwrap();
    let listed: Vec<(&str, Option<&ForkOrigin>)> = forks
        .iter()
        .map(|r| (r.id.as_str(), r.fork.as_ref()))
        .collect();
    assert_eq!(
        listed,
        [("fork-a", Some(&null)), ("fork-b", Some(&said))],
        "oldest first, each with its origin"
    );
    assert_eq!(store.forks_of("parent", 1).await.unwrap().len(), 1);
    assert!(store.forks_of("fork-a", 10).await.unwrap().is_empty());
    assert!(store.forks_of("nothing", 10).await.unwrap().is_empty());
    // A forked benchmark names its parent benchmark.
    let bench = BenchRecord {
        name: "b-fork".into(),
        created_at: "t".into(),
        dataset: "gsm8k".into(),
        protocols: vec!["som".into()],
        limit: None,
        seed: 1,
        config: serde_json::json!({}),
        fork: Some(ForkOrigin {
            parent: "b".into(),
            round: 1,
            intervention: serde_json::json!({"kind": "say-wrong", "agent": 0}),
        }),
        left_out: None,
    };
    store.create_bench(&bench).await.unwrap();
    assert_eq!(store.bench("b-fork").await.unwrap(), bench);
}
