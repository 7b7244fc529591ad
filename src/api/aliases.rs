//! Plunk's names for our fields and parameters (issue 28). Where api.md is silent about a
//! request's shape, a request written against Plunk's own API is taken as it is: each alias is
//! a field or parameter of its own in the OpenAPI document, mapped here to the one it stands
//! for. Both names given with different values is refused, never silently resolved.

use crate::error::ApiError;

/// The value of a body field that has two names: 422 naming the alias when both are given and
/// differ.
pub fn field<T: PartialEq>(
    (name, value): (&str, Option<T>),
    (alias, aliased): (&str, Option<T>),
) -> Result<Option<T>, ApiError> {
    match (value, aliased) {
        (Some(a), Some(b)) if a != b => Err(ApiError::invalid_field(
            alias,
            "conflict",
            format!("{alias} is another name for {name}: give one of them"),
        )),
        (a, b) => Ok(a.or(b)),
    }
}

/// The value of a query parameter that has two names (an empty value is none): 400 when both
/// are given and differ.
pub fn param<'r>(
    (name, value): (&str, Option<&'r str>),
    (alias, aliased): (&str, Option<&'r str>),
) -> Result<Option<&'r str>, ApiError> {
    let given = |v: Option<&'r str>| v.map(str::trim).filter(|v| !v.is_empty());
    match (given(value), given(aliased)) {
        (Some(a), Some(b)) if a != b => {
            Err(ApiError::bad_request(format!("{name} and {alias} are one parameter: give one of them")))
        }
        (a, b) => Ok(a.or(b)),
    }
}
