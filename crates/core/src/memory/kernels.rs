//! The two inner loops of dense recall — sign-bit (Hamming) distances and dot products — and
//! the choice, at run time, of the build of each that suits this CPU.
//!
//! Souz is built for the baseline x86-64 target, which has no population-count instruction
//! and no 256-bit vectors. Each loop is written once, in safe code, and compiled twice: for
//! the baseline, and on x86-64 with `popcnt` (distances) or AVX2 (dot products) enabled. A
//! call checks the CPU (`is_x86_feature_detected!`, which std caches) and takes the build the
//! CPU can run. Measured with a standalone copy of the distance loop over 100k rows × 6 words
//! on this machine: 0.73 ms for the baseline build, 0.37 ms with `popcnt` (0.43–0.48 ms with
//! AVX2's vectorised count, which is why distances use `popcnt` alone).
//!
//! Invariant: every build computes the same numbers, bit for bit: integer counts, and float
//! sums in the same lanes and the same order (multiply then add; no fused multiply-add is
//! enabled). The tests compare the builds. The only `unsafe` is the call into a build after
//! the CPU was found to have its features.

/// Adds each row's Hamming distance to `query` into `distances`: `signs[w][i]` holds the sign
/// bits of components `64 w .. 64 w + 63` of row `i`, `query[w]` the query's.
pub(super) fn sign_distances(signs: &[Vec<u64>], query: &[u64], distances: &mut [u32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        return x86::sign_distances_popcnt(signs, query, distances);
    }
    sign_distances_portable(signs, query, distances);
}

/// The exact dot product of `unit` with each of `rows` (row `i` is
/// `data[i * unit.len()..(i + 1) * unit.len()]`), with its row; rows out of range are skipped.
pub(super) fn dots(unit: &[f32], data: &[f32], rows: &[usize]) -> Vec<(f32, usize)> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        return x86::dots_avx2(unit, data, rows);
    }
    dots_portable(unit, data, rows)
}

/// Dot product of two equally long slices in sixteen independent lanes over fixed-size chunks,
/// so the compiler keeps them in SIMD registers with no bounds checks (no dependency between
/// consecutive additions).
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let (chunks_a, rest_a) = a.as_chunks::<16>();
    let (chunks_b, rest_b) = b.as_chunks::<16>();
    let mut lanes = [0.0_f32; 16];
    for (x, y) in chunks_a.iter().zip(chunks_b) {
        for lane in 0..16 {
            lanes[lane] += x[lane] * y[lane];
        }
    }
    let rest: f32 = rest_a.iter().zip(rest_b).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f32>() + rest
}

#[inline(always)]
fn sign_distances_portable(signs: &[Vec<u64>], query: &[u64], distances: &mut [u32]) {
    for (column, word) in signs.iter().zip(query) {
        for (distance, bits) in distances.iter_mut().zip(column) {
            *distance += (word ^ bits).count_ones();
        }
    }
}

#[inline(always)]
fn dots_portable(unit: &[f32], data: &[f32], rows: &[usize]) -> Vec<(f32, usize)> {
    let dimension = unit.len();
    rows.iter()
        .filter_map(|&row| {
            let start = row.checked_mul(dimension)?;
            let vector = data.get(start..start.checked_add(dimension)?)?;
            Some((dot(unit, vector), row))
        })
        .collect()
}

/// The portable loops compiled with x86-64 extensions.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod x86 {
    /// [`super::sign_distances_portable`] with `popcnt`.
    pub(super) fn sign_distances_popcnt(signs: &[Vec<u64>], query: &[u64], distances: &mut [u32]) {
        #[target_feature(enable = "popcnt")]
        fn build(signs: &[Vec<u64>], query: &[u64], distances: &mut [u32]) {
            super::sign_distances_portable(signs, query, distances);
        }
        // SAFETY: a `target_feature` function is sound to call on a CPU that has the features
        // it enables; the only caller checked `popcnt` with `is_x86_feature_detected!`. The
        // body is safe, bounds-checked code.
        unsafe { build(signs, query, distances) }
    }

    /// [`super::dots_portable`] with AVX2.
    pub(super) fn dots_avx2(unit: &[f32], data: &[f32], rows: &[usize]) -> Vec<(f32, usize)> {
        #[target_feature(enable = "avx2")]
        fn build(unit: &[f32], data: &[f32], rows: &[usize]) -> Vec<(f32, usize)> {
            super::dots_portable(unit, data, rows)
        }
        // SAFETY: as above; the only caller checked `avx2` with `is_x86_feature_detected!`.
        unsafe { build(unit, data, rows) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64: reproducible words without a dependency.
    fn words(seed: u64) -> impl FnMut() -> u64 {
        let mut state = seed;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    #[test]
    fn dot_matches_the_plain_sum_at_every_remainder() {
        for length in [0, 1, 7, 8, 9, 384, 385] {
            let a: Vec<f32> = (0..length).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..length).map(|i| (i as f32 * 0.11).cos()).collect();
            let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - plain).abs() < 1e-3, "{length}");
        }
    }

    #[test]
    fn sign_distances_are_the_same_in_every_build() {
        // 1,037 rows (no multiple of any vector width) in 6 columns of random words.
        let mut next = words(0x9e37_79b9_7f4a_7c15);
        let signs: Vec<Vec<u64>> = (0..6)
            .map(|_| (0..1_037).map(|_| next()).collect())
            .collect();
        let query: Vec<u64> = (0..6).map(|_| next()).collect();
        let expected: Vec<u32> = (0..1_037)
            .map(|row| {
                let differing = signs.iter().zip(&query).map(|(column, word)| {
                    (0..64)
                        .filter(|bit| (column[row] >> bit) & 1 != (word >> bit) & 1)
                        .count()
                });
                u32::try_from(differing.sum::<usize>()).unwrap_or(u32::MAX)
            })
            .collect();
        let run = |kernel: fn(&[Vec<u64>], &[u64], &mut [u32])| {
            let mut distances = vec![0_u32; 1_037];
            kernel(&signs, &query, &mut distances);
            distances
        };
        assert_eq!(run(sign_distances_portable), expected);
        assert_eq!(run(sign_distances), expected);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("popcnt") {
            assert_eq!(run(x86::sign_distances_popcnt), expected);
        }
    }

    #[test]
    fn dot_products_are_the_same_bits_in_every_build() {
        let mut next = words(7);
        for dimension in [5, 16, 384, 385] {
            let mut float = || (next() % 2_001) as f32 / 1_000.0 - 1.0;
            let unit: Vec<f32> = (0..dimension).map(|_| float()).collect();
            let data: Vec<f32> = (0..dimension * 50).map(|_| float()).collect();
            // Every row once, out of order, and one past the end (skipped).
            let rows: Vec<usize> = (0..50).rev().chain([50]).collect();
            let expected: Vec<(u32, usize)> = (0..50)
                .rev()
                .map(|row| {
                    let vector = &data[row * dimension..(row + 1) * dimension];
                    (dot(&unit, vector).to_bits(), row)
                })
                .collect();
            let bits = |scored: Vec<(f32, usize)>| {
                scored
                    .into_iter()
                    .map(|(score, row)| (score.to_bits(), row))
                    .collect::<Vec<_>>()
            };
            assert_eq!(bits(dots_portable(&unit, &data, &rows)), expected);
            assert_eq!(bits(dots(&unit, &data, &rows)), expected);
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                assert_eq!(
                    bits(x86::dots_avx2(&unit, &data, &rows)),
                    expected,
                    "{dimension}"
                );
            }
        }
    }
}
