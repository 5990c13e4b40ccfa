//! Answer extraction, in MB of response text per second: `Answer::extract` under each answer
//! kind on responses written the way instruct models write them (chain of thought, markdown,
//! GSM8K calculator notes, `\boxed{}`, option letters, code fences), short and long.
//!
//! ```sh
//! cargo bench -p moot-core --bench extraction
//! cargo bench -p moot-core --bench extraction -- extract/math   # one kind
//! ```
//!
//! Each kind is one group over its responses. The baseline of every group, `rfind-baseline`,
//! is `str::rfind` of a marker that none of the responses contains, so it reads every byte of
//! the same responses once: the floor any extractor pays. `extract` is read as a ratio to it.
//! Setup checks that every response gives the answer a grader would read, so the bench times
//! real extractions, not early misses. Scaling on adversarial input is the `extract_scaling`
//! example's job, not this file's.

mod common;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use moot_core::answer::{Answer, AnswerKind, ExtractContext};

/// One response, the options of its question (choice kind) and the answer a grader reads in it
/// (canonical form; for code, the program's first line).
struct Response {
    text: &'static str,
    options: &'static [&'static str],
    expected: &'static str,
}

const fn r(text: &'static str, expected: &'static str) -> Response {
    Response {
        text,
        options: &[],
        expected,
    }
}

const fn choice(
    text: &'static str,
    options: &'static [&'static str],
    expected: &'static str,
) -> Response {
    Response {
        text,
        options,
        expected,
    }
}

const NUMERIC: &[Response] = &[
    r(
        "A box holds 12 pencils and the class needs 150 pencils, so it needs 150 / 12 = \
         <<150/12=12.5>>12.5 boxes.\nBoxes come whole, so the teacher buys 13 boxes.\nEach box \
         costs $3, so she pays 13 * 3 = $<<13*3=39>>39.\n#### 39",
        "39",
    ),
    r(
        "Let me work through this step by step.\n\n**Step 1: Morning sales.**\nThe bakery sells \
         48 croissants before noon at $2.50 each, which brings in 48 × 2.50 = $120.\n\n\
         **Step 2: Afternoon sales.**\nIn the afternoon it sells half as many, 24 croissants, \
         but at a discount of 20%, so each costs 2.50 × 0.8 = $2.00. That brings in \
         24 × 2.00 = $48.\n\n**Step 3: Costs.**\nEach croissant costs $0.75 to make, and 72 were \
         made, so the costs are 72 × 0.75 = $54.\n\n**Step 4: Profit.**\nRevenue is \
         120 + 48 = $168, and profit is 168 − 54 = $114.\n\nLet me double-check: 48 + 24 = 72 \
         croissants, matching the number baked. Revenue 168, cost 54, difference 114. ✓\n\n\
         **Final Answer:** The bakery's profit for the day is $\\boxed{114}$ dollars.",
        "114",
    ),
    r(
        "Tom starts with 3 apples, buys 5 more and gives away 2, leaving 3 + 5 - 2 = 6. \
         The answer is 6.",
        "6",
    ),
    r(
        "We need 17 × 24.\n\n17 × 20 = 340 and 17 × 4 = 68, so 17 × 24 = 340 + 68 = 408.\n\n\
         Checking another way: 24 × 17 = 24 × 10 + 24 × 7 = 240 + 168 = 408. Both agree.\n\n\
         Agent 2 wrote 418, which comes from adding 78 instead of 68 for 17 × 4; that step is \
         wrong, so I keep my result.\n\nFinal answer: 408",
        "408",
    ),
    r(
        "The train covers the first 120 km at 60 km/h, which takes 120 / 60 = 2 hours. The \
         remaining 180 km at 90 km/h take 180 / 90 = 2 hours. The whole trip of 300 km takes \
         4 hours, so the average speed is $\\frac{300}{4} = 75$ km/h.\n\nThe answer is \
         75 km/h.",
        "75",
    ),
];

const MMLU_OPTIONS: &[&str] = &[
    "push factors.",
    "pull factors.",
    "distance decay.",
    "migration selectivity.",
];

const BIOLOGY_OPTIONS: &[&str] = &[
    "Mitochondria",
    "Ribosomes",
    "Golgi apparatus",
    "Lysosomes",
    "Smooth endoplasmic reticulum",
];

const CHOICE: &[Response] = &[
    choice(
        "Migration falls off as the distance between origin and destination grows; geographers \
         call this distance decay. Push and pull factors explain why people move, not how \
         distance changes the flow.\n\nThe correct answer is (C).",
        MMLU_OPTIONS,
        "C",
    ),
    choice(
        "Proteins are assembled from amino acids on ribosomes, which read the messenger RNA. \
         Mitochondria make ATP, the Golgi apparatus packages proteins, lysosomes digest waste \
         and the smooth ER makes lipids.\n\nAnswer: B",
        BIOLOGY_OPTIONS,
        "B",
    ),
    choice(
        "Let's consider each option in turn.\n\n- **(A) Mitochondria**: these are the site of \
         aerobic respiration and produce most of the cell's ATP. They do contain their own \
         ribosomes, but they are not where most proteins are made.\n- **(B) Ribosomes**: the \
         site of translation, where mRNA is read and amino acids are joined into \
         polypeptides.\n- **(C) Golgi apparatus**: modifies, sorts and packages proteins that \
         were already made.\n- **(D) Lysosomes**: contain digestive enzymes that break down \
         macromolecules and worn-out organelles.\n- **(E) Smooth endoplasmic reticulum**: \
         synthesises lipids and detoxifies drugs; it has no ribosomes on its surface, unlike \
         the rough ER.\n\nThe question asks where proteins are synthesised. Only one organelle \
         does that directly, and the others act before or after synthesis.\n\n\
         **Answer: (B)**",
        BIOLOGY_OPTIONS,
        "B",
    ),
    choice(
        "People who move are not a random sample of the population they leave: they tend to \
         be young adults with more schooling than those who stay. That is a property of the \
         migrants themselves, not a push or pull factor, and distance plays no part, so A, B \
         and C are out.\n\nThe best option is D.",
        MMLU_OPTIONS,
        "D",
    ),
];

const YES_NO: &[Response] = &[
    r(
        "Yes. Saint Vincent and the Grenadines has English as its official language, and the \
         Creole most people speak day to day is English-based.",
        "yes",
    ),
    r(
        "A polar bear's fur looks white, but each hair is actually transparent and hollow, and \
         the skin underneath is black. So the statement that polar bears have white skin is \
         wrong.\n\nThe answer is false.",
        "no",
    ),
    r(
        "Step 1: A standard bowling pin is about 38 cm tall.\nStep 2: An adult emperor penguin \
         stands about 110 cm tall.\nStep 3: 110 cm is almost three times 38 cm, so a penguin \
         would tower over a pin.\n\nSo the answer is no: a bowling pin is not taller than an \
         emperor penguin.",
        "no",
    ),
    r(
        "Let me reason about this carefully.\n\nThe Great Wall of China is very long — more \
         than 20,000 km counting all its branches — but it is only a few metres wide. Whether \
         an object is visible from orbit depends on its width and its contrast with the \
         surroundings, not on its length. Astronauts on the International Space Station, at \
         about 400 km, report that highways and airports are easier to see than the wall, \
         whose stone blends with the terrain. From the Moon, nothing of that width could be \
         seen at all.\n\nThe question asks whether the wall is visible from the Moon with the \
         naked eye. It is not.\n\nFinal answer: No",
        "no",
    ),
];

const MATH: &[Response] = &[
    r(
        "We have $r = \\sqrt{0^2 + 3^2} = 3$. The point lies on the positive $y$-axis, so \
         $\\theta = \\frac{\\pi}{2}$.\n\nTherefore the polar coordinates are \
         $\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}$.",
        "(3,\\frac{\\pi}{2})",
    ),
    r(
        "Multiply both sides by 3: $3x - 2 = 12$, so $3x = 14$ and $x = \\frac{14}{3}$.\n\n\
         Final answer: $\\dfrac{14}{3}$",
        "\\frac{14}{3}",
    ),
    r(
        "## Solution\n\nWe want the sum of the roots of $f(x) = 2x^2 - 7x + 3$.\n\n\
         By Vieta's formulas, for $ax^2 + bx + c$ the sum of the roots is $-\\frac{b}{a}$. \
         Here $a = 2$ and $b = -7$, so the sum is $\\frac{7}{2}$.\n\nAs a check, factor: \
         $2x^2 - 7x + 3 = (2x - 1)(x - 3)$, whose roots are $x = \\frac{1}{2}$ and $x = 3$. \
         Their sum is $\\frac{1}{2} + 3 = \\frac{7}{2}$. ✓\n\nA first attempt gave \
         $\\boxed{-\\frac{7}{2}}$, but that forgot the minus sign in $-\\frac{b}{a}$; the \
         corrected value is\n\n$$\\boxed{\\dfrac{7}{2}}$$",
        "\\frac{7}{2}",
    ),
    r(
        "The angle $60^\\circ$ lies in the first quadrant, where sine is positive, and \
         $\\sin 60^\\circ = \\frac{\\sqrt{3}}{2}$.\n\nThe answer is \
         $\\boxed{\\dfrac{\\sqrt{3}}{2}}$.",
        "\\frac{\\sqrt{3}}{2}",
    ),
];

const TEXT: &[Response] = &[
    r(
        "The first letters: \"sioux\": \"s\" (19). \"fortescue\": \"f\" (6). \"purloin\": \"p\" \
         (16). \"percept\": \"p\" (16). \"helmsman\": \"h\" (8). We now have: (6) \"fortescue\" \
         < (8) \"helmsman\" < (16) [\"purloin\" ? \"percept\"] < (19) \"sioux\". The second \
         letters of the tie: \"purloin\": \"u\" (21). \"percept\": \"e\" (5), so \"percept\" < \
         \"purloin\". Hence \"fortescue\" < \"helmsman\" < \"percept\" < \"purloin\" < \"sioux\". \
         So the answer is fortescue helmsman percept purloin sioux.",
        "fortescue helmsman percept purloin sioux",
    ),
    r(
        "Sorting by first letter: b < i < t.\n\nThe answer is: Bootlegging Indifferent \
         Trainman.",
        "bootlegging indifferent trainman",
    ),
    r(
        "The capital of Australia is not Sydney, its largest city, but the planned city built \
         as a compromise between Sydney and Melbourne.\n\nFinal answer: Canberra",
        "canberra",
    ),
    r(
        "Let me trace the swaps one at a time.\n\nAt the start: Alice has the red ball, Bob \
         has the green ball, Claire has the blue ball.\n\n1. Alice and Bob swap: Alice has \
         green, Bob has red, Claire has blue.\n2. Claire and Alice swap: Alice has blue, Bob \
         has red, Claire has green.\n3. Bob and Claire swap: Alice has blue, Bob has green, \
         Claire has red.\n\nAfter the three swaps Alice holds the blue ball, Bob the green one \
         and Claire the red one. The question asks which ball Bob has at the end.\n\n\
         Final answer: the green ball",
        "the green ball",
    ),
];

const CODE: &[Response] = &[
    r(
        "To solve this, compare every pair of numbers and check their distance.\n\n\
         ```python\nfrom typing import List\n\n\ndef has_close_elements(numbers: List[float], \
         threshold: float) -> bool:\n    for i, a in enumerate(numbers):\n        for j, b in \
         enumerate(numbers):\n            if i != j and abs(a - b) < threshold:\n                \
         return True\n    return False\n```\n\nThis runs in O(n^2) time.",
        "from typing import List",
    ),
    r(
        "```python\ndef fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + \
         b\n    return a\n```\n\nExample usage:\n\n```python\nprint(fib(10))  # 55\n```",
        "def fib(n):",
    ),
    r(
        "Here is an approach that sorts first, so that only neighbours need comparing.\n\n\
         1. Sort the list (O(n log n)).\n2. Walk adjacent pairs; the closest pair in a sorted \
         list is always adjacent.\n3. Return as soon as one gap is below the threshold.\n\n\
         ```python\nfrom typing import List\n\n\ndef has_close_elements(numbers: List[float], \
         threshold: float) -> bool:\n    \"\"\"True when two numbers are closer than \
         threshold.\"\"\"\n    ordered = sorted(numbers)\n    for left, right in \
         zip(ordered, ordered[1:]):\n        if right - left < threshold:\n            return \
         True\n    return False\n```\n\nEdge cases: an empty list or a single number has no \
         pair, so the loop does not run and the function returns `False`. Duplicates give a \
         gap of 0, which is below any positive threshold.\n\nTests:\n\n```python\nassert not \
         has_close_elements([1.0, 2.0, 3.0], 0.5)\nassert has_close_elements([1.0, 2.8, 3.0, \
         4.0, 5.0, 2.0], 0.3)\n```",
        "from typing import List",
    ),
];

/// The kinds in `AnswerKind::ALL`'s order, with their responses.
const KINDS: &[(AnswerKind, &[Response])] = &[
    (AnswerKind::Numeric, NUMERIC),
    (AnswerKind::Choice, CHOICE),
    (AnswerKind::YesNo, YES_NO),
    (AnswerKind::Math, MATH),
    (AnswerKind::Text, TEXT),
    (AnswerKind::Code, CODE),
];

/// A marker no response contains, so that `rfind` reads every byte.
const ABSENT: &str = "\u{0}answer";

/// One response ready to extract from: its text and its options as `ExtractContext` wants them.
struct Prepared {
    text: &'static str,
    options: Vec<String>,
}

/// The responses of one kind, after checking that each gives its expected answer.
fn prepare(kind: AnswerKind, responses: &[Response]) -> Vec<Prepared> {
    responses
        .iter()
        .map(|r| {
            assert!(!r.text.contains(ABSENT));
            let options: Vec<String> = r.options.iter().map(|o| o.to_string()).collect();
            let got = Answer::extract(kind, r.text, &ExtractContext { choices: &options });
            let got = got.map(|a| a.canonical().to_string());
            let read = match (&got, kind) {
                (Some(program), AnswerKind::Code) => program.lines().next() == Some(r.expected),
                (got, _) => got.as_deref() == Some(r.expected),
            };
            assert!(read, "{kind}: read {got:?} from {:?}", r.text);
            Prepared {
                text: r.text,
                options,
            }
        })
        .collect()
}

fn extraction(c: &mut Criterion) {
    for &(kind, responses) in KINDS {
        let prepared = prepare(kind, responses);
        let bytes: usize = prepared.iter().map(|p| p.text.len()).sum();
        let mut group = c.benchmark_group(format!("extract/{kind}"));
        group.throughput(Throughput::Bytes(bytes as u64));
        group.bench_function("rfind-baseline", |b| {
            b.iter(|| {
                for p in &prepared {
                    black_box(black_box(p.text).rfind(ABSENT));
                }
            })
        });
        group.bench_function("extract", |b| {
            b.iter(|| {
                for p in &prepared {
                    let ctx = ExtractContext {
                        choices: &p.options,
                    };
                    black_box(Answer::extract(kind, black_box(p.text), &ctx));
                }
            })
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = common::quick();
    targets = extraction
}
criterion_main!(benches);
