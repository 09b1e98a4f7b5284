//! Numbers written for people, the one place they become text: the calculator's answers, the
//! cells of spreadsheets, the data tools' statistics and plot axes.

/// Integers below this have at most 15 significant digits (and are exact in an `f64`).
const EXACT_INTEGERS: f64 = 1e15;

/// Formats a number for people: integers without decimals, others rounded to 15 significant
/// digits (which hides binary noise such as `0.30000000000000004`), very large or very small
/// magnitudes in scientific notation.
pub fn format_number(value: f64) -> String {
    if !value.is_finite() {
        return value.to_string();
    }
    // An integer of at most 15 digits is its own rounding: print it as one (no decimal
    // round trip, which costs more than the calculation).
    if value.fract() == 0.0 && value.abs() < EXACT_INTEGERS {
        // Integral and below 1e15: the conversion is exact (and -0 becomes 0).
        return (value as i64).to_string();
    }
    format_by_rounding(value)
}

/// [`format_number`]'s general path, for a finite value: round to 15 significant digits
/// through the decimal form, then print the shortest text that reads back as that rounded
/// number.
fn format_by_rounding(value: f64) -> String {
    let rounded: f64 = format!("{value:.14e}").parse().unwrap_or(value);
    let rounded = if rounded == 0.0 { 0.0 } else { rounded }; // no "-0"
    let magnitude = rounded.abs();
    if magnitude != 0.0 && !(1e-7..1e21).contains(&magnitude) {
        return format!("{rounded:e}");
    }
    // `Display` for f64 prints integers without a fraction and never uses exponents.
    rounded.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_print_as_the_rounding_would() {
        let mut values = vec![0.0, -0.0, 1.0, -1.0, 14.0, 57984.0, -123_456.0];
        for digits in 1..=16 {
            let power = 10f64.powi(digits);
            values.extend([power - 1.0, power, power + 1.0, -(power - 1.0), -power]);
        }
        // Integers with more than 15 digits take the general path, which rounds them.
        values.extend([
            999_999_999_999_999.0,
            1e15 + 7.0,
            2f64.powi(53) + 2.0,
            1e20,
            1e21,
        ]);
        for value in values {
            assert_eq!(format_number(value), format_by_rounding(value), "{value}");
        }
        assert_eq!(format_number(-0.0), "0");
        assert_eq!(format_number(1e15 + 7.0), "1000000000000010");
    }
}
