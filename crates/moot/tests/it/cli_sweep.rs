//! `moot sweep`: a spec in, DIR/<stem>.md, .csv and .svg out; a known direction of the sim
//! shows through; a bad spec is refused with the field named.

use crate::common;

use std::path::Path;

use common::Env;

/// Three agents right 35% of the time alone, torn between gold and one distractor, re-deriving
/// every round (α = 1).
const TEAM: &str = r#"
[agent]
accuracy = 0.35
alpha = 1.0
distractors = ["418"]
"#;

/// Rows of the CSV as (header, rows of fields).
fn csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect::<Vec<_>>());
    let header = lines.next().unwrap();
    (header, lines.collect())
}

fn column(header: &[String], name: &str) -> usize {
    header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name} in {header:?}"))
}

#[test]
fn a_two_by_two_sweep_writes_a_report_a_table_and_a_heat_map() {
    let env = Env::new();
    let spec = env.write(
        "tiny.toml",
        &format!(
            r#"title = "Tiny sweep"
debates = 300
rounds = 1
agents = 3
compare = ["score", "last"]
{TEAM}
[[arms]]
label = "score"
protocol = "free-mad-c"
rule = "free-mad"

[[arms]]
label = "last"
protocol = "free-mad-c"
rule = "majority-last"

[x]
param = "beta_conform"
values = [-1, 3]

[y]
param = "accuracy"
values = [0.4, 0.6]
"#
        ),
    );
    let out = env.dir.path().join("out");
    let stdout = env.stdout(&[
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--debates",
        "20",
        "--concurrency",
        "2",
    ]);
    for ext in ["md", "csv", "svg"] {
        let path = out.join(format!("tiny.{ext}"));
        assert!(path.is_file(), "{}", path.display());
        assert!(stdout.contains(path.to_str().unwrap()), "{stdout}");
    }
    // Issue 58 item 5: the summary is printed, not only where it was written.
    assert!(
        stdout.starts_with(
            "Over 4 cells (2 beta_conform × 2 accuracy values) of 20 paired debates each"
        ),
        "{stdout}"
    );

    let md = std::fs::read_to_string(out.join("tiny.md")).unwrap();
    assert!(md.starts_with("# Tiny sweep\n"), "{md}");
    assert!(md.contains("--debates 20"), "the command is echoed: {md}");
    assert!(md.contains("4 cells × 20 seeded debates"), "{md}");
    assert!(
        md.contains("title = \"Tiny sweep\""),
        "the spec is echoed: {md}"
    );
    assert!(
        md.contains("| beta_conform | accuracy | score | last | Δ | only score | only last | p |"),
        "{md}"
    );
    let rows: Vec<&str> = md
        .lines()
        .skip_while(|l| !l.starts_with("| beta_conform |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    let coords: Vec<String> = rows
        .iter()
        .map(|r| {
            r.split('|')
                .skip(1)
                .take(2)
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    assert_eq!(coords, ["-1,0.4", "3,0.4", "-1,0.6", "3,0.6"], "{md}");
    assert!(md.contains("![score − last over beta_conform and accuracy](tiny.svg)"));

    let (header, rows) = csv(&out.join("tiny.csv"));
    assert_eq!(&header[..3], ["beta_conform", "accuracy", "debates"]);
    assert_eq!(rows.len(), 4);
    let (correct, accuracy) = (
        column(&header, "score_correct"),
        column(&header, "score_accuracy"),
    );
    for row in &rows {
        assert_eq!(row[2], "20");
        let k: f64 = row[correct].parse().unwrap();
        let a: f64 = row[accuracy].parse().unwrap();
        assert!((a - k / 20.0).abs() < 1e-6, "{row:?}");
    }

    let svg = std::fs::read_to_string(out.join("tiny.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches(r#"<rect class="cell""#).count(), 4);
}

#[test]
fn conformity_to_the_agreement_prompt_moves_som_and_not_free_mad_n() {
    // som's prompt urges agreement (its agents follow `beta_conform`); free-mad-n's urges
    // critique (they follow `beta_anti`, untouched here). With gold a minority, strong
    // conformity locks in round 0's wrong pluralities.
    let env = Env::new();
    let spec = env.write(
        "direction.toml",
        &format!(
            r#"title = "som vs free-mad-n"
debates = 60
rounds = 2
agents = 3
{TEAM}
[[arms]]
label = "som"
protocol = "som"
rule = "majority-last"

[[arms]]
label = "n"
protocol = "free-mad-n"
rule = "majority-last"

[x]
param = "beta_conform"
values = [-2, 4]
"#
        ),
    );
    let out = env.dir.path().join("out");
    env.stdout(&[
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let (header, rows) = csv(&out.join("direction.csv"));
    let (som, n) = (column(&header, "som_correct"), column(&header, "n_correct"));
    let count = |row: usize, col: usize| rows[row][col].parse::<usize>().unwrap();
    assert_eq!(rows[0][0], "-2");
    // Measured: som right in 24 of 60 at β_conform = −2 and 14 at 4.
    assert!(count(0, som) >= count(1, som) + 5, "{rows:?}");
    assert_eq!(count(0, n), count(1, n), "{rows:?}");
    // A line plot (one axis), well formed enough to open and end.
    let svg = std::fs::read_to_string(out.join("direction.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
}

#[test]
fn a_bad_spec_exits_2_naming_the_field() {
    let env = Env::new();
    let spec = env.write(
        "bad.toml",
        "title = \"t\"\ndebates = 5\nrounds = 1\nagents = 3\n\
         [[arms]]\nlabel = \"a\"\nprotocol = \"som\"\n[[arms]]\nlabel = \"b\"\nprotocol = \"free-mad-n\"\n\
         [x]\nparam = \"conformity\"\nvalues = [1]\n",
    );
    let out = env.dir.path().join("out");
    let assert = env
        .moot()
        .args([
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .assert()
        .code(2);
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("x.param: unknown parameter \"conformity\""),
        "{stderr}"
    );
    assert!(!out.exists());
}

/// Issue 32 item 8: a sweep's size is checked before it starts. Before, `debates =
/// 100000000000` aborted on a failed allocation with a backtrace, `debates = i64::MAX` printed a
/// wrapped total and ran, and a 100k × 100k grid grew to gigabytes without a word.
#[test]
fn a_sweep_past_its_size_bounds_exits_2_naming_the_bound_and_how_to_raise_it() {
    let env = Env::new();
    let out = env.dir.path().join("out");
    let spec = |debates: &str, x: &str, y: &str| {
        format!(
            "title = \"t\"\ndebates = {debates}\nrounds = 1\nagents = 3\n\
             [[arms]]\nlabel = \"a\"\nprotocol = \"som\"\n[[arms]]\nlabel = \"b\"\nprotocol = \"free-mad-n\"\n\
             [x]\nparam = \"accuracy\"\nvalues = [{x}]\n[y]\nparam = \"beta_conform\"\nvalues = [{y}]\n"
        )
    };
    let sweep = |name: &str, text: &str, extra: &[&str]| {
        let path = env.write(name, text);
        let mut args = vec![
            "sweep".to_string(),
            path.display().to_string(),
            "--out".into(),
            out.display().to_string(),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        env.refused(&args)
    };
    let err = sweep("big.toml", &spec("100000000000", "0.5", "1"), &[]);
    assert!(
        err.contains("max_debates: 1 cell × 2 arms × 100000000000 debates per cell is 200000000000 debates, more than max_debates = 10000000")
            && err.contains("set max_debates = 200000000000 at the top of the spec"),
        "{err}"
    );
    let err = sweep("huge.toml", &spec(&i64::MAX.to_string(), "0.5", "1"), &[]);
    assert!(
        err.contains(&format!(
            "1 cell × 2 arms × {} debates per cell is 18446744073709551614 debates",
            i64::MAX
        )),
        "{err}"
    );
    let err = sweep(
        "flag.toml",
        &spec("5", "0.5", "1"),
        &["--debates", "100000000000"],
    );
    assert!(
        err.contains("× 100000000000 debates per cell (--debates) is 200000000000 debates"),
        "{err}"
    );
    let values = |n: usize| {
        (0..n)
            .map(|i| format!("{}", i as f64 / n as f64))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let err = sweep(
        "grid.toml",
        &spec("1", &values(100_000), &values(100_000)),
        &[],
    );
    assert!(
        err.contains("max_cells: the grid is 100000 × 100000 = 10000000000 cells, more than max_cells = 10000")
            && err.contains("set max_cells = 10000000000 at the top of the spec"),
        "{err}"
    );
    assert!(!out.exists());
}
