//! Numbers as models write them: signs, thousands separators, decimals, fractions, scientific
//! notation, `$`, `%`.

use std::fmt;

/// A parsed number: its value and its canonical text.
///
/// The canonical text of an integer literal is kept digit-exact (so 20-digit answers survive);
/// other values are written as the shortest decimal that round-trips.
#[derive(Debug, Clone, PartialEq)]
pub struct Number {
    value: f64,
    canonical: String,
}

/// Relative tolerance under which two numbers are the same answer (see docs/architecture.md,
/// Answers).
pub const RELATIVE_TOLERANCE: f64 = 1e-6;

impl Number {
    pub fn from_f64(value: f64) -> Option<Number> {
        if !value.is_finite() {
            return None;
        }
        Some(Number {
            value,
            canonical: format_f64(value),
        })
    }

    pub fn value(&self) -> f64 {
        self.value
    }

    pub fn canonical(&self) -> &str {
        &self.canonical
    }

    /// Equal when canonical texts match or values agree within [`RELATIVE_TOLERANCE`].
    pub fn approx_eq(&self, other: &Number) -> bool {
        self.canonical == other.canonical || approx_eq_f64(self.value, other.value)
    }

    /// Parses a whole string that is a single number (`"1,000"`, `"-3.25"`, `"$18"`, `"25%"`,
    /// `"1/2"`, `"025"`). Anything else is `None`.
    pub fn parse_exact(s: &str) -> Option<Number> {
        let s = s.trim().trim_end_matches('.').trim();
        let found = scan_numbers(s);
        match found.as_slice() {
            [one]
                if one.start_skip_ok(s)
                    && s[one.end..].trim().trim_end_matches('%').trim().is_empty() =>
            {
                Some(one.number.clone())
            }
            _ => None,
        }
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical)
    }
}

pub fn approx_eq_f64(a: f64, b: f64) -> bool {
    if a == b {
        return true;
    }
    let scale = a.abs().max(b.abs());
    (a - b).abs() <= RELATIVE_TOLERANCE * scale
}

/// Integers without separators, everything else as the shortest round-tripping decimal.
pub fn format_f64(value: f64) -> String {
    let value = if value == 0.0 { 0.0 } else { value }; // no "-0"
    if value.fract() == 0.0 && value.abs() < 1e16 {
        format!("{value:.0}")
    } else {
        format!("{value}")
    }
}

/// One number found in a text, with its byte range.
#[derive(Debug, Clone)]
pub struct Found {
    pub start: usize,
    pub end: usize,
    pub number: Number,
}

impl Found {
    /// True when nothing but a currency sign or sign precedes the number in `s`.
    fn start_skip_ok(&self, s: &str) -> bool {
        s[..self.start]
            .chars()
            .all(|c| c == '$' || c.is_whitespace() || c == '\\')
    }
}

fn is_minus(c: char) -> bool {
    matches!(c, '-' | '−' | '–')
}

/// Every number in `text`, in order.
///
/// A `-` makes a number negative only when it does not follow a digit, letter or closing
/// bracket (so `3-4` is two positives and `x = -5` is negative). Thousands separators must come
/// in groups of three (`1,000`, not `1,2`). `a/b` with integer parts is a fraction.
pub fn scan_numbers(text: &str) -> Vec<Found> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (_, c) = chars[i];
        let starts_decimal = c == '.'
            && chars.get(i + 1).is_some_and(|&(_, n)| n.is_ascii_digit())
            && (i == 0 || !chars[i - 1].1.is_ascii_digit());
        if !(c.is_ascii_digit() || starts_decimal) {
            i += 1;
            continue;
        }
        // Digits glued to a letter ("H2O", "step2", "x2") are not answers.
        if i > 0 && chars[i - 1].1.is_alphabetic() {
            i += 1;
            while i < chars.len() && chars[i].1.is_ascii_alphanumeric() {
                i += 1;
            }
            continue;
        }
        let (negative, start) = sign_before(&chars, i);
        let mut j = i;
        let mut digits = String::new();
        while j < chars.len() && chars[j].1.is_ascii_digit() {
            digits.push(chars[j].1);
            j += 1;
        }
        // Thousands groups: ",ddd" not followed by another digit.
        if !digits.is_empty() && digits.len() <= 3 {
            while j + 3 < chars.len()
                && chars[j].1 == ','
                && chars[j + 1..=j + 3]
                    .iter()
                    .all(|&(_, d)| d.is_ascii_digit())
                && chars.get(j + 4).is_none_or(|&(_, d)| !d.is_ascii_digit())
            {
                for &(_, d) in &chars[j + 1..=j + 3] {
                    digits.push(d);
                }
                j += 4;
            }
        }
        let mut fraction = String::new();
        if j + 1 < chars.len() && chars[j].1 == '.' && chars[j + 1].1.is_ascii_digit() {
            j += 1;
            while j < chars.len() && chars[j].1.is_ascii_digit() {
                fraction.push(chars[j].1);
                j += 1;
            }
        }
        // Scientific notation ("2e3", "6.02e23", "5e-1", "1E+3"), read whole.
        let mut exponent = None;
        if j < chars.len() && !digits.is_empty() {
            if let Some((length, value)) = exponent_at(&text[chars[j].0..]) {
                let end = chars[j].0 + length;
                while j < chars.len() && chars[j].0 < end {
                    j += 1;
                }
                exponent = Some(value);
            }
        }
        let mut number = match exponent {
            None => decimal_number(negative, &digits, &fraction),
            Some(exponent) => scientific_number(negative, &digits, &fraction, exponent),
        };
        // A fraction "a/b" of two plain integers.
        if exponent.is_none() && fraction.is_empty() && j + 1 < chars.len() && chars[j].1 == '/' {
            let mut k = j + 1;
            let mut denominator = String::new();
            while k < chars.len() && chars[k].1.is_ascii_digit() {
                denominator.push(chars[k].1);
                k += 1;
            }
            let decimal_follows =
                k + 1 < chars.len() && chars[k].1 == '.' && chars[k + 1].1.is_ascii_digit();
            if !denominator.is_empty() && !decimal_follows {
                if let (Ok(n), Ok(d)) = (digits.parse::<f64>(), denominator.parse::<f64>()) {
                    if d != 0.0 {
                        let v = if negative { -n / d } else { n / d };
                        number = Number::from_f64(v);
                        j = k;
                    }
                }
            }
        }
        let end = chars.get(j).map_or(text.len(), |&(b, _)| b);
        if let Some(number) = number {
            out.push(Found {
                start: chars[start].0,
                end,
                number,
            });
        }
        i = j.max(i + 1);
    }
    out
}

/// The exponent of scientific notation at the start of `rest` (`e3`, `E+3`, `e-12`, a Unicode
/// minus too): its length in bytes and its value, saturated past an `i32` (out of any range,
/// refused by the caller). `None` when `rest` starts with none, or when a letter or digit is
/// glued after its digits, or a point and a digit (`2e3.5`); a sentence's closing point is not.
pub(super) fn exponent_at(rest: &str) -> Option<(usize, i32)> {
    let mut chars = rest.char_indices().peekable();
    if !matches!(chars.next(), Some((_, 'e' | 'E'))) {
        return None;
    }
    let negative = chars
        .next_if(|&(_, c)| c == '+' || is_minus(c))
        .map(|(_, c)| is_minus(c));
    let first = chars.peek().map_or(rest.len(), |&(at, _)| at);
    while chars.next_if(|&(_, c)| c.is_ascii_digit()).is_some() {}
    let end = chars.peek().map_or(rest.len(), |&(at, _)| at);
    if end == first {
        return None;
    }
    let after = &rest[end..];
    let mut next = after.chars();
    let glued = match next.next() {
        Some('.') => next.next().is_some_and(|c| c.is_ascii_digit()),
        Some(c) => c.is_alphanumeric(),
        None => false,
    };
    if glued {
        return None;
    }
    let magnitude = rest[first..end].parse::<i32>().unwrap_or(i32::MAX);
    Some((
        end,
        if negative == Some(true) {
            -magnitude
        } else {
            magnitude
        },
    ))
}

/// Whether a minus sign (possibly with a `$` between: `-$5`, `$-5`) makes the number at `i`
/// negative, and the char index where the number's text starts.
fn sign_before(chars: &[(usize, char)], i: usize) -> (bool, usize) {
    let mut k = i;
    if k > 0 && chars[k - 1].1 == '$' {
        k -= 1;
    }
    if k > 0 && is_minus(chars[k - 1].1) {
        let before = if k >= 2 { Some(chars[k - 2].1) } else { None };
        let before = if before == Some('$') && k >= 3 {
            Some(chars[k - 3].1)
        } else {
            before
        };
        let glued = before.is_some_and(|b| b.is_alphanumeric() || matches!(b, ')' | ']' | '}'));
        if !glued {
            return (true, k - 1);
        }
    }
    (false, k)
}

/// A number from its literal digits, keeping integers digit-exact.
fn decimal_number(negative: bool, int_digits: &str, frac_digits: &str) -> Option<Number> {
    let int_trimmed = int_digits.trim_start_matches('0');
    let frac_trimmed = frac_digits.trim_end_matches('0');
    let int_part = if int_trimmed.is_empty() {
        "0"
    } else {
        int_trimmed
    };
    let magnitude = if frac_trimmed.is_empty() {
        int_part.to_string()
    } else {
        format!("{int_part}.{frac_trimmed}")
    };
    let value: f64 = magnitude.parse().ok()?;
    let is_zero = value == 0.0;
    let canonical = if negative && !is_zero {
        format!("-{magnitude}")
    } else {
        magnitude
    };
    let value = if negative { -value } else { value };
    Some(Number { value, canonical })
}

/// A number written `digits.fraction` times ten to `exponent`, as the decimal it is (so
/// `6.02e23` is the integer 602000000000000000000000, digit-exact). `None` when it is out of
/// the range of a double: too large (`1e400`), or not zero yet too small to be told from zero
/// (`1e-400`).
fn scientific_number(
    negative: bool,
    int_digits: &str,
    frac_digits: &str,
    exponent: i32,
) -> Option<Number> {
    let mantissa_is_zero = int_digits
        .chars()
        .chain(frac_digits.chars())
        .all(|d| d == '0');
    if mantissa_is_zero {
        return decimal_number(negative, "0", "");
    }
    let value: f64 = format!("{int_digits}.{frac_digits}0e{exponent}")
        .parse()
        .ok()?;
    if !value.is_finite() || value == 0.0 {
        return None;
    }
    // The decimal point moves `exponent` places within the digits as written. The value is a
    // finite double, so the zeros added are fewer than about 330 (beyond what was written).
    let all = format!("{int_digits}{frac_digits}");
    let point = i64::try_from(int_digits.len()).ok()? + i64::from(exponent);
    let (int_part, frac_part) = if point <= 0 {
        let zeros = usize::try_from(-point).ok()?;
        (String::new(), format!("{}{all}", "0".repeat(zeros)))
    } else {
        let point = usize::try_from(point).ok()?;
        if point >= all.len() {
            (
                format!("{all}{}", "0".repeat(point - all.len())),
                String::new(),
            )
        } else {
            (all[..point].to_string(), all[point..].to_string())
        }
    };
    let mut number = decimal_number(negative, &int_part, &frac_part)?;
    // The digits are exact; the value is the double nearest the written number.
    number.value = if negative { -value } else { value };
    Some(number)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> Vec<String> {
        scan_numbers(s)
            .into_iter()
            .map(|f| f.number.canonical)
            .collect()
    }

    #[test]
    fn scans_the_usual_forms() {
        assert_eq!(canon("It costs $1,250.50 total"), vec!["1250.5"]);
        assert_eq!(canon("x = -5 and 3-4"), vec!["-5", "3", "4"]);
        assert_eq!(canon("1/2 of 025 is .5"), vec!["0.5", "25", "0.5"]);
        assert_eq!(canon("-$7 or $-8"), vec!["-7", "-8"]);
        assert_eq!(canon("H2O step2 3rd"), vec!["3"]);
        assert_eq!(canon("a.5 b"), Vec::<String>::new());
        assert_eq!(canon("list 1,2,3"), vec!["1", "2", "3"]);
        assert_eq!(canon("0.000 and -0"), vec!["0", "0"]);
        assert_eq!(
            canon("12345678901234567890123"),
            vec!["12345678901234567890123"]
        );
        assert_eq!(canon("1/3"), vec!["0.3333333333333333"]);
        assert_eq!(canon("4/2"), vec!["2"]);
    }

    #[test]
    fn scientific_notation_is_read_whole() {
        assert_eq!(canon("Final answer: 2e3"), vec!["2000"]);
        assert_eq!(canon("6.02e23 atoms"), vec!["602000000000000000000000"]);
        assert_eq!(
            canon("5e-1 and 1E+3 and -2.5e2"),
            vec!["0.5", "1000", "-250"]
        );
        assert_eq!(canon("0e7 is 0.0E-3"), vec!["0", "0"]);
        // Out of a double's range: no number at all, never the mantissa alone.
        assert_eq!(canon("1e400 and 1e-400"), Vec::<String>::new());
        assert_eq!(canon("9e99999999999"), Vec::<String>::new());
        // Not exponents: a letter glued after, no digit after the e, a word.
        assert_eq!(canon("2e3x 4e 5eggs 3 each"), vec!["2", "4", "5", "3"]);
        // A point after the exponent: no exponent, and the digits glued to the e are no number.
        assert_eq!(canon("2e3.5"), vec!["2", "5"]);
        let big = Number::parse_exact("6.02e23").unwrap();
        assert!(approx_eq_f64(big.value(), 6.02e23));
        assert_eq!(Number::parse_exact("2e3").unwrap().canonical(), "2000");
        assert!(Number::parse_exact("1e400").is_none());
    }

    #[test]
    fn parse_exact_accepts_only_one_number() {
        assert_eq!(
            Number::parse_exact("$18").map(|n| n.canonical),
            Some("18".into())
        );
        assert_eq!(
            Number::parse_exact("25%").map(|n| n.canonical),
            Some("25".into())
        );
        assert_eq!(
            Number::parse_exact("18.").map(|n| n.canonical),
            Some("18".into())
        );
        assert!(Number::parse_exact("18 apples").is_none());
        assert!(Number::parse_exact("1 2").is_none());
        assert!(Number::parse_exact("").is_none());
    }

    #[test]
    fn tolerance_is_relative() {
        let a = Number::from_f64(1_000_000.0).unwrap();
        let b = Number::from_f64(1_000_000.5).unwrap();
        let c = Number::from_f64(1_000_002.0).unwrap();
        assert!(a.approx_eq(&b));
        assert!(!a.approx_eq(&c));
    }
}
