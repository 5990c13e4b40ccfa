//! CPython's `random.Random`, as far as freemad's topologies need it: seeding from an integer,
//! `getrandbits`, `_randbelow` and `sample`, giving the same numbers as CPython 3.11 for the
//! same seed. freemad draws each agent's `k_reviewers` peers with `random.Random(seed).sample`,
//! so moot reproduces that draw exactly when it runs a freemad configuration.
//!
//! The generator is the Mersenne Twister MT19937. CPython seeds it from an integer by splitting
//! the integer's absolute value into 32-bit words, least significant first (zero is one word
//! 0), and passing them to the reference `init_by_array`.

/// State size of MT19937, in 32-bit words.
const N: usize = 624;
/// The middle offset of MT19937's recurrence.
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// Why [`Random::sample`] cannot draw.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SampleError {
    /// As CPython: "Sample larger than population or is negative".
    #[error("sample of {k} is larger than the population of {n}")]
    TooLarge { k: usize, n: usize },
}

/// A CPython-compatible `random.Random` (the Mersenne Twister part; no floats are needed).
#[derive(Clone)]
pub struct Random {
    state: [u32; N],
    index: usize,
}

impl std::fmt::Debug for Random {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Random")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl Random {
    /// `random.Random(seed)` for a non-negative integer seed.
    pub fn new(seed: u64) -> Random {
        // Little-endian 32-bit words without leading zero words; zero is the single word 0.
        let low = seed as u32;
        let high = (seed >> 32) as u32;
        if high == 0 {
            Random::from_key(&[low])
        } else {
            Random::from_key(&[low, high])
        }
    }

    /// The generator seeded by the reference `init_by_array` over `key` (an empty key is read
    /// as the single word 0, as CPython seeds zero).
    pub fn from_key(key: &[u32]) -> Random {
        let key: &[u32] = if key.is_empty() { &[0] } else { key };
        let mut mt = Self::init_genrand(19_650_218);
        let mut i = 1usize;
        let mut j = 0usize;
        for _ in 0..N.max(key.len()) {
            let prev = mt[i - 1] ^ (mt[i - 1] >> 30);
            mt[i] = (mt[i] ^ prev.wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = mt[i - 1] ^ (mt[i - 1] >> 30);
            mt[i] = (mt[i] ^ prev.wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        Random {
            state: mt,
            index: N,
        }
    }

    fn init_genrand(seed: u32) -> [u32; N] {
        let mut mt = [0u32; N];
        mt[0] = seed;
        for i in 1..N {
            mt[i] = 1_812_433_253u32
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        mt
    }

    /// Refills the state with the next N words (the reference `genrand_uint32` reload).
    fn reload(&mut self) {
        let mt = &mut self.state;
        let twist = |upper: u32, lower: u32, far: u32| {
            let y = (upper & UPPER_MASK) | (lower & LOWER_MASK);
            far ^ (y >> 1) ^ if y & 1 == 1 { MATRIX_A } else { 0 }
        };
        for k in 0..N - M {
            mt[k] = twist(mt[k], mt[k + 1], mt[k + M]);
        }
        for k in N - M..N - 1 {
            mt[k] = twist(mt[k], mt[k + 1], mt[k + M - N]);
        }
        mt[N - 1] = twist(mt[N - 1], mt[0], mt[M - 1]);
        self.index = 0;
    }

    /// The next 32-bit output (`genrand_uint32`).
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.reload();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `getrandbits(bits)` as 32-bit words, least significant first: one output per word, the
    /// last (most significant) word shifted down to the bits that remain.
    pub fn getrandbits_words(&mut self, bits: u32) -> Vec<u32> {
        if bits == 0 {
            return vec![0];
        }
        let mut left = bits;
        let mut words = Vec::with_capacity(bits.div_ceil(32) as usize);
        while left > 0 {
            let r = self.next_u32();
            words.push(if left < 32 { r >> (32 - left) } else { r });
            left = left.saturating_sub(32);
        }
        words
    }

    /// `getrandbits(bits)` for `bits` ≤ 64 (more is cut to 64; see [`Self::getrandbits_words`]).
    pub fn getrandbits(&mut self, bits: u32) -> u64 {
        let bits = bits.min(64);
        if bits <= 32 {
            // CPython's fast path: one output, shifted.
            return if bits == 0 {
                0
            } else {
                u64::from(self.next_u32() >> (32 - bits))
            };
        }
        self.getrandbits_words(bits)
            .iter()
            .rev()
            .fold(0u64, |acc, &w| (acc << 32) | u64::from(w))
    }

    /// `_randbelow(n)`: `getrandbits(n.bit_length())` until the draw is below `n`; 0 for
    /// `n` = 0 (CPython's method is defined for n > 0 only).
    pub fn randbelow(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let bits = u64::BITS - n.leading_zeros();
        loop {
            let r = self.getrandbits(bits);
            if r < n {
                return r;
            }
        }
    }

    /// `sample(population, k)`: `k` distinct elements in selection order, by CPython 3.11's
    /// algorithm (a partial swap over a copy of the population when that copy is smaller than
    /// the set of chosen indexes would be, otherwise rejection of indexes already chosen).
    pub fn sample<T: Clone>(&mut self, population: &[T], k: usize) -> Result<Vec<T>, SampleError> {
        let n = population.len();
        if k > n {
            return Err(SampleError::TooLarge { k, n });
        }
        let mut result = Vec::with_capacity(k);
        if n <= set_size(k) {
            let mut pool = population.to_vec();
            for i in 0..k {
                let j = self.randbelow((n - i) as u64) as usize;
                result.push(pool[j].clone());
                pool[j] = pool[n - i - 1].clone();
            }
        } else {
            let mut chosen = std::collections::HashSet::with_capacity(k);
            for _ in 0..k {
                let mut j = self.randbelow(n as u64) as usize;
                while chosen.contains(&j) {
                    j = self.randbelow(n as u64) as usize;
                }
                chosen.insert(j);
                result.push(population[j].clone());
            }
        }
        Ok(result)
    }
}

/// CPython's `setsize` in `sample`: `21`, plus `4 ** ceil(log(3k, 4))` when k > 5. 3k is
/// never a power of four, so the ceiling is the smallest power of four above 3k, computed
/// here in integers rather than floats.
fn set_size(k: usize) -> usize {
    let mut size = 21usize;
    if k > 5 {
        let target = k.saturating_mul(3);
        let mut power = 1usize;
        while power < target {
            power = power.saturating_mul(4);
        }
        size = size.saturating_add(power);
    }
    size
}

#[cfg(test)]
mod tests {
    //! Expected values were printed by CPython 3.11.7 (`random.Random(seed)`).
    use super::*;

    fn bits128(r: &mut Random, bits: u32) -> u128 {
        r.getrandbits_words(bits)
            .iter()
            .rev()
            .fold(0u128, |acc, &w| (acc << 32) | u128::from(w))
    }

    /// A seed, its first three `getrandbits(32)`, then getrandbits(1), (7), (33), (64), (100).
    type Draws = (u64, [u32; 3], u64, u64, u64, u64, u128);

    #[test]
    fn getrandbits_matches_cpython() {
        let cases: [Draws; 6] = [
            (
                0,
                [3626764237, 1654615998, 3255389356],
                1,
                53,
                173879092,
                9431353882395063546,
                1023487968931306232115508920805,
            ),
            (
                1,
                [577090037, 2444712010, 3639700191],
                1,
                97,
                271041745,
                9139164268605729673,
                829696747689386081914396241732,
            ),
            (
                12345,
                [1789368711, 3146859322, 43676229],
                1,
                105,
                3448207591,
                6795996055430912186,
                734464464665624625609062314256,
            ),
            (
                (1 << 32) + 5,
                [675479763, 2085189291, 1213270837],
                1,
                77,
                3587694693,
                11580414858807844413,
                1184661714992758341334025868063,
            ),
            (
                u64::MAX,
                [93740670, 1068495656, 1452108352],
                1,
                27,
                6253746770,
                16963090519847801214,
                932356441723451645829263891398,
            ),
            (
                14598278634844950003,
                [2947948545, 3387708272, 3934240446],
                1,
                10,
                3457160758,
                6582795439898552806,
                490490905337405315553006092121,
            ),
        ];
        for (seed, first, b1, b7, b33, b64, b100) in cases {
            let mut r = Random::new(seed);
            let got: Vec<u32> = (0..3).map(|_| r.getrandbits(32) as u32).collect();
            assert_eq!(got, first, "seed {seed}");
            assert_eq!(r.getrandbits(1), b1, "seed {seed}");
            assert_eq!(r.getrandbits(7), b7, "seed {seed}");
            assert_eq!(r.getrandbits(33), b33, "seed {seed}");
            assert_eq!(r.getrandbits(64), b64, "seed {seed}");
            assert_eq!(bits128(&mut r, 100), b100, "seed {seed}");
        }
    }

    #[test]
    fn zero_bits_draw_nothing() {
        // r = Random(3); getrandbits(0) -> 0, then getrandbits(32), (64), (65).
        let mut r = Random::new(3);
        assert_eq!(r.getrandbits(0), 0);
        assert_eq!(r.getrandbits(32), 1022050301);
        assert_eq!(r.getrandbits(64), 10039257264037515410);
        assert_eq!(bits128(&mut r, 65), 25271212241622098793);
    }

    #[test]
    fn an_empty_key_is_seed_zero() {
        let (mut a, mut b) = (Random::from_key(&[]), Random::new(0));
        assert_eq!(a.next_u32(), b.next_u32());
    }

    #[test]
    fn randbelow_matches_cpython() {
        // r = Random(3); [r._randbelow(n) for n in [1, 2, 3, 5, 7, 100, 1000, 2**40 + 3]]
        let mut r = Random::new(3);
        let got: Vec<u64> = [1, 2, 3, 5, 7, 100, 1000, (1u64 << 40) + 3]
            .into_iter()
            .map(|n| r.randbelow(n))
            .collect();
        assert_eq!(got, vec![0, 0, 1, 4, 3, 80, 594, 1034389053353]);
    }

    fn sample(seed: u64, n: usize, k: usize) -> Vec<usize> {
        let population: Vec<usize> = (0..n).collect();
        Random::new(seed).sample(&population, k).unwrap()
    }

    #[test]
    fn sample_by_swapping_matches_cpython() {
        assert_eq!(sample(7, 5, 3), vec![2, 1, 3]);
        assert_eq!(sample(12345, 26, 6), vec![13, 23, 0, 9, 11, 6]);
        assert_eq!(sample(99, 21, 2), vec![12, 20]);
        assert_eq!(sample(0, 10, 0), Vec::<usize>::new());
        let letters = ["b", "c", "d", "e"];
        assert_eq!(Random::new(0).sample(&letters, 2).unwrap(), vec!["e", "c"]);
    }

    #[test]
    fn sample_by_rejection_matches_cpython() {
        assert_eq!(sample(7, 30, 4), vec![10, 4, 12, 20]);
        assert_eq!(sample(99, 22, 2), vec![12, 6]);
        assert_eq!(
            sample(u64::MAX, 100, 10),
            vec![2, 31, 43, 79, 27, 58, 78, 12, 47, 98]
        );
        // 100 of 2000: the expected draw rejects some repeated indexes.
        let expected = [
            1275, 523, 1519, 734, 1628, 1414, 1930, 1723, 1515, 1335, 1888, 1085, 59, 1721, 953,
            1589, 1931, 510, 1329, 106, 1845, 321, 231, 761, 960, 1778, 504, 779, 1113, 208, 1175,
            26, 1497, 443, 835, 572, 372, 1876, 1776, 1568, 797, 326, 1560, 1632, 147, 284, 1265,
            1264, 911, 259, 270, 3, 1991, 1784, 10, 428, 1584, 441, 1966, 339, 1786, 340, 592, 642,
            1969, 407, 1104, 1794, 1388, 1281, 419, 1927, 1983, 403, 1979, 1976, 1830, 784, 611,
            44, 739, 849, 1916, 298, 540, 133, 679, 617, 1674, 1235, 1200, 6, 1220, 1449, 692, 135,
            634, 727, 1676, 626,
        ];
        assert_eq!(sample(5, 2000, 100), expected);
    }

    #[test]
    fn set_size_follows_cpython() {
        // 21 + 4 ** ceil(log(3k, 4)) for k > 5.
        assert_eq!(set_size(0), 21);
        assert_eq!(set_size(5), 21);
        assert_eq!(set_size(6), 21 + 64);
        assert_eq!(set_size(21), 21 + 64);
        assert_eq!(set_size(22), 21 + 256);
        assert_eq!(set_size(100), 21 + 1024);
    }

    #[test]
    fn a_sample_larger_than_the_population_is_an_error() {
        assert_eq!(
            Random::new(1).sample(&[1, 2], 3),
            Err(SampleError::TooLarge { k: 3, n: 2 })
        );
    }
}
