//! Built-in tool `Calculator`: arithmetic for the model without `eval`.
//!
//! Owns a small recursive-descent parser (expression text -> [`Expression`] tree) and its
//! evaluator. Numbers become text through `souz_parse::numbers::format_number`, which the
//! data tools use too, so `0.1 + 0.2` reads `0.3` everywhere.
//!
//! Grammar, loosest binding first:
//!
//! ```text
//! sum     := product (('+' | '-') product)*
//! product := unary (('*' | '/') unary)*
//! unary   := ('+' | '-') unary | power
//! power   := primary ('^' unary)?          right-associative: 2^3^2 = 2^9
//! primary := number | '(' sum ')' | name '(' sum ')' | 'pi'
//! ```
//!
//! So `-2^2` is `-4` (as in mathematics), `2^-1` is `0.5`, and `sin(30)^2` squares the sine.
//! `sin`, `cos` and `tan` take degrees (as the original did).
//!
//! Invariants: parsing is bounded (expression length and nesting depth), never panics, and every
//! failure is a [`CalculationError`] whose message names what and where. Evaluation refuses
//! results that are not finite numbers instead of printing `inf` or `NaN`.

use schemars::JsonSchema;
use serde::Deserialize;
pub(crate) use souz_parse::numbers::format_number;
use souz_protocol::{Risk, ToolCategory};

use crate::tools::{
    CatalogBuilder, CatalogError, Plan, Planned, Tool, ToolContext, ToolError, ToolOutput,
    localized,
};

/// Longest expression accepted, in characters (as the original).
const MAX_EXPRESSION_CHARS: usize = 4_096;
/// Longest expression shown in a plan's summary.
const SUMMARY_CHARS: usize = 120;
/// Deepest nesting of parentheses, unary signs and powers accepted (as the original).
const MAX_DEPTH: usize = 64;

/// Registers this module's tools.
pub(crate) fn register(builder: &mut CatalogBuilder) -> Result<(), CatalogError> {
    builder.add(Calculator)?;
    Ok(())
}

/// Arguments of `Calculator`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct CalculatorArgs {
    /// The expression to evaluate, e.g. `128 * 453`, `10 + 5 / 2`, `(2 + 3) ^ 2`,
    /// `sqrt(144)`, `sin(30)` (degrees). Operators: + - * / ^ and parentheses.
    pub expression: String,
}

/// `Calculator`: evaluates an arithmetic expression.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Calculator;

impl Tool for Calculator {
    type Args = CalculatorArgs;
    type Prepared = Expression;

    fn name(&self) -> &'static str {
        "Calculator"
    }

    fn description(&self) -> &'static str {
        "Evaluates a mathematical expression. Use this for ANY math calculation to get an exact \
         answer. Supports + - * / ^ (power, right-associative), parentheses, unary minus, \
         sqrt(x), sin(x), cos(x), tan(x) with x in degrees, and the constant pi. \
         Whole-number results are printed without decimals."
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Calculator
    }

    fn risk(&self) -> Risk {
        Risk::ReadOnly
    }

    async fn plan(
        &self,
        args: &CalculatorArgs,
        ctx: &ToolContext,
    ) -> Result<Planned<Expression>, ToolError> {
        let expression =
            parse(&args.expression).map_err(|error| ToolError::Failed(error.to_string()))?;
        // One line for people, however the expression was laid out.
        let mut shown = args
            .expression
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if shown.chars().count() > SUMMARY_CHARS {
            shown = shown.chars().take(SUMMARY_CHARS - 1).collect::<String>() + "…";
        }
        Ok(Plan::new(localized!(
            ctx.language,
            "Calculate {shown}",
            "Вычислить {shown}"
        ))
        .with(expression))
    }

    async fn run(
        &self,
        _args: CalculatorArgs,
        expression: Expression,
        _ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let value = expression
            .evaluate()
            .map_err(|error| ToolError::Failed(error.to_string()))?;
        Ok(ToolOutput::text(format_number(value)))
    }
}

/// Why an expression could not be parsed or evaluated. Positions are 1-based character columns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CalculationError {
    /// Nothing to evaluate.
    #[error("the expression is empty")]
    Empty,
    /// Longer than [`MAX_EXPRESSION_CHARS`].
    #[error("the expression is longer than {MAX_EXPRESSION_CHARS} characters")]
    TooLong,
    /// Nested deeper than [`MAX_DEPTH`].
    #[error("the expression is nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// A character or token that does not fit where it stands.
    #[error("unexpected `{found}` at position {position}")]
    Unexpected {
        /// What was found.
        found: String,
        /// Where.
        position: usize,
    },
    /// The expression stopped where more was needed.
    #[error("the expression ends too early: expected {expected}")]
    UnexpectedEnd {
        /// What was needed.
        expected: &'static str,
    },
    /// An opening parenthesis without its closing one.
    #[error("missing `)` for the `(` at position {0}")]
    UnclosedParenthesis(usize),
    /// A number that does not parse.
    #[error("`{text}` at position {position} is not a number")]
    BadNumber {
        /// The text.
        text: String,
        /// Where.
        position: usize,
    },
    /// A name that is neither a function nor a constant.
    #[error(
        "unknown function or name `{name}` at position {position} (known: sqrt, sin, cos, tan, pi)"
    )]
    UnknownName {
        /// The name.
        name: String,
        /// Where.
        position: usize,
    },
    /// Division by zero.
    #[error("division by zero")]
    DivisionByZero,
    /// `sqrt` of a negative number.
    #[error("square root of a negative number ({0})")]
    NegativeSquareRoot(String),
    /// `tan` at an odd multiple of 90 degrees.
    #[error("tan({0}) is undefined")]
    UndefinedTangent(String),
    /// The result (or a step of it) is too large for a 64-bit float.
    #[error("the result is too large (overflow)")]
    Overflow,
    /// The result is not a real number (e.g. a negative number to a fractional power).
    #[error("the result is not a real number")]
    NotANumber,
}

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expression {
    /// A literal.
    Number(f64),
    /// `-x`.
    Negate(Box<Expression>),
    /// `a op b`.
    Binary(Operator, Box<Expression>, Box<Expression>),
    /// `f(x)`.
    Call(Function, Box<Expression>),
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operator {
    /// `+`
    Add,
    /// `-`
    Subtract,
    /// `*`
    Multiply,
    /// `/`
    Divide,
    /// `^`
    Power,
}

/// A built-in function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Function {
    /// Square root.
    Sqrt,
    /// Sine of degrees.
    Sin,
    /// Cosine of degrees.
    Cos,
    /// Tangent of degrees.
    Tan,
}

impl Expression {
    /// Evaluates the tree; every intermediate result must be finite.
    pub(crate) fn evaluate(&self) -> Result<f64, CalculationError> {
        let value = match self {
            Self::Number(value) => *value,
            Self::Negate(inner) => -inner.evaluate()?,
            Self::Binary(operator, left, right) => {
                let (left, right) = (left.evaluate()?, right.evaluate()?);
                match operator {
                    Operator::Add => left + right,
                    Operator::Subtract => left - right,
                    Operator::Multiply => left * right,
                    Operator::Divide if right == 0.0 => {
                        return Err(CalculationError::DivisionByZero);
                    }
                    Operator::Divide => left / right,
                    Operator::Power if left == 0.0 && right < 0.0 => {
                        return Err(CalculationError::DivisionByZero);
                    }
                    Operator::Power => left.powf(right),
                }
            }
            Self::Call(function, argument) => {
                let argument = argument.evaluate()?;
                match function {
                    Function::Sqrt if argument < 0.0 => {
                        return Err(CalculationError::NegativeSquareRoot(format_number(
                            argument,
                        )));
                    }
                    Function::Sqrt => argument.sqrt(),
                    Function::Sin => sine_degrees(argument),
                    Function::Cos => sine_degrees(argument + 90.0),
                    Function::Tan => {
                        let cosine = sine_degrees(argument + 90.0);
                        if cosine == 0.0 {
                            return Err(CalculationError::UndefinedTangent(format_number(
                                argument,
                            )));
                        }
                        sine_degrees(argument) / cosine
                    }
                }
            }
        };
        if value.is_nan() {
            Err(CalculationError::NotANumber)
        } else if value.is_infinite() {
            Err(CalculationError::Overflow)
        } else {
            Ok(value)
        }
    }
}

/// Sine of an angle in degrees, exact at multiples of 90° (so `cos(90)` is 0, not 6e-17).
fn sine_degrees(degrees: f64) -> f64 {
    // `%` on floats is exact, so reducing first loses nothing.
    let reduced = degrees % 360.0;
    if reduced % 90.0 == 0.0 {
        // The quadrant is exact here: reduced is one of -270, -180, -90, 0, 90, 180, 270.
        return match (reduced / 90.0).rem_euclid(4.0) as u8 {
            1 => 1.0,
            3 => -1.0,
            _ => 0.0,
        };
    }
    reduced.to_radians().sin()
}

/// Parses an expression.
pub(crate) fn parse(text: &str) -> Result<Expression, CalculationError> {
    if text.chars().count() > MAX_EXPRESSION_CHARS {
        return Err(CalculationError::TooLong);
    }
    let tokens = tokenize(text)?;
    if tokens.is_empty() {
        return Err(CalculationError::Empty);
    }
    let mut parser = Parser { tokens, next: 0 };
    let expression = parser.sum(0)?;
    match parser.peek() {
        None => Ok(expression),
        Some(token) => Err(CalculationError::Unexpected {
            found: token.kind.to_string(),
            position: token.position,
        }),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum TokenKind {
    Number(f64),
    Name(String),
    Plus,
    Minus,
    Star,
    Slash,
    Caret,
    Open,
    Close,
}

impl std::fmt::Display for TokenKind {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Number(value) => write!(formatter, "{}", format_number(*value)),
            Self::Name(name) => formatter.write_str(name),
            Self::Plus => formatter.write_str("+"),
            Self::Minus => formatter.write_str("-"),
            Self::Star => formatter.write_str("*"),
            Self::Slash => formatter.write_str("/"),
            Self::Caret => formatter.write_str("^"),
            Self::Open => formatter.write_str("("),
            Self::Close => formatter.write_str(")"),
        }
    }
}

#[derive(Debug, Clone)]
struct Token {
    kind: TokenKind,
    /// 1-based character column.
    position: usize,
}

fn tokenize(text: &str) -> Result<Vec<Token>, CalculationError> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut index = 0;
    while index < chars.len() {
        let character = chars[index];
        let position = index + 1;
        let simple = match character {
            '+' => Some(TokenKind::Plus),
            // Models and people paste typographic signs; they mean the same operators.
            '-' | '\u{2212}' | '\u{2013}' => Some(TokenKind::Minus),
            '*' | '\u{00D7}' | '\u{22C5}' => Some(TokenKind::Star),
            '/' | '\u{00F7}' => Some(TokenKind::Slash),
            '^' => Some(TokenKind::Caret),
            '(' => Some(TokenKind::Open),
            ')' => Some(TokenKind::Close),
            _ => None,
        };
        if let Some(kind) = simple {
            tokens.push(Token { kind, position });
            index += 1;
        } else if character.is_whitespace() {
            index += 1;
        } else if character.is_ascii_digit() || character == '.' {
            let start = index;
            while index < chars.len() && (chars[index].is_ascii_digit() || chars[index] == '.') {
                index += 1;
            }
            // Scientific notation: 1.5e3, 2E-4 (the exponent needs at least one digit).
            if index < chars.len() && matches!(chars[index], 'e' | 'E') {
                let mut lookahead = index + 1;
                if lookahead < chars.len() && matches!(chars[lookahead], '+' | '-') {
                    lookahead += 1;
                }
                if lookahead < chars.len() && chars[lookahead].is_ascii_digit() {
                    index = lookahead;
                    while index < chars.len() && chars[index].is_ascii_digit() {
                        index += 1;
                    }
                }
            }
            let literal: String = chars[start..index].iter().collect();
            let value = literal
                .parse::<f64>()
                .ok()
                .filter(|value| value.is_finite())
                .ok_or(CalculationError::BadNumber {
                    text: literal,
                    position,
                })?;
            tokens.push(Token {
                kind: TokenKind::Number(value),
                position,
            });
        } else if character.is_alphabetic() {
            let start = index;
            while index < chars.len() && (chars[index].is_alphanumeric() || chars[index] == '_') {
                index += 1;
            }
            let name: String = chars[start..index].iter().collect();
            tokens.push(Token {
                kind: TokenKind::Name(name.to_lowercase()),
                position,
            });
        } else {
            return Err(CalculationError::Unexpected {
                found: character.to_string(),
                position,
            });
        }
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    next: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.next)
    }

    fn advance(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.next).cloned();
        if token.is_some() {
            self.next += 1;
        }
        token
    }

    fn eat(&mut self, kind: &TokenKind) -> bool {
        if self.peek().is_some_and(|token| &token.kind == kind) {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn sum(&mut self, depth: usize) -> Result<Expression, CalculationError> {
        let mut left = self.product(depth)?;
        loop {
            let operator = if self.eat(&TokenKind::Plus) {
                Operator::Add
            } else if self.eat(&TokenKind::Minus) {
                Operator::Subtract
            } else {
                return Ok(left);
            };
            let right = self.product(depth)?;
            left = Expression::Binary(operator, Box::new(left), Box::new(right));
        }
    }

    fn product(&mut self, depth: usize) -> Result<Expression, CalculationError> {
        let mut left = self.unary(depth)?;
        loop {
            let operator = if self.eat(&TokenKind::Star) {
                Operator::Multiply
            } else if self.eat(&TokenKind::Slash) {
                Operator::Divide
            } else {
                return Ok(left);
            };
            let right = self.unary(depth)?;
            left = Expression::Binary(operator, Box::new(left), Box::new(right));
        }
    }

    fn unary(&mut self, depth: usize) -> Result<Expression, CalculationError> {
        if depth > MAX_DEPTH {
            return Err(CalculationError::TooDeep);
        }
        if self.eat(&TokenKind::Plus) {
            return self.unary(depth + 1);
        }
        if self.eat(&TokenKind::Minus) {
            return Ok(Expression::Negate(Box::new(self.unary(depth + 1)?)));
        }
        self.power(depth)
    }

    fn power(&mut self, depth: usize) -> Result<Expression, CalculationError> {
        let base = self.primary(depth)?;
        if self.eat(&TokenKind::Caret) {
            // The exponent is a `unary`, which recurses back into `power`: right-associative.
            let exponent = self.unary(depth + 1)?;
            return Ok(Expression::Binary(
                Operator::Power,
                Box::new(base),
                Box::new(exponent),
            ));
        }
        Ok(base)
    }

    fn primary(&mut self, depth: usize) -> Result<Expression, CalculationError> {
        let Some(token) = self.advance() else {
            return Err(CalculationError::UnexpectedEnd {
                expected: "a number, `(` or a function",
            });
        };
        match token.kind {
            TokenKind::Number(value) => Ok(Expression::Number(value)),
            TokenKind::Open => self.parenthesized(token.position, depth),
            TokenKind::Name(name) => {
                let function = match name.as_str() {
                    "pi" => return Ok(Expression::Number(std::f64::consts::PI)),
                    "sqrt" => Function::Sqrt,
                    "sin" => Function::Sin,
                    "cos" => Function::Cos,
                    "tan" => Function::Tan,
                    _ => {
                        return Err(CalculationError::UnknownName {
                            name,
                            position: token.position,
                        });
                    }
                };
                match self.advance() {
                    Some(Token {
                        kind: TokenKind::Open,
                        position,
                    }) => {
                        let argument = self.parenthesized(position, depth)?;
                        Ok(Expression::Call(function, Box::new(argument)))
                    }
                    Some(other) => Err(CalculationError::Unexpected {
                        found: other.kind.to_string(),
                        position: other.position,
                    }),
                    None => Err(CalculationError::UnexpectedEnd {
                        expected: "`(` after the function name",
                    }),
                }
            }
            other => Err(CalculationError::Unexpected {
                found: other.to_string(),
                position: token.position,
            }),
        }
    }

    /// Parses `sum ')'` after an opening parenthesis at `open_position`.
    fn parenthesized(
        &mut self,
        open_position: usize,
        depth: usize,
    ) -> Result<Expression, CalculationError> {
        if depth + 1 > MAX_DEPTH {
            return Err(CalculationError::TooDeep);
        }
        let inner = self.sum(depth + 1)?;
        if self.eat(&TokenKind::Close) {
            Ok(inner)
        } else {
            match self.peek() {
                None => Err(CalculationError::UnclosedParenthesis(open_position)),
                Some(token) => Err(CalculationError::Unexpected {
                    found: token.kind.to_string(),
                    position: token.position,
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests;
