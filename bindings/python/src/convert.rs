//! JSON values between Rust (`serde_json::Value`) and Python objects.
//!
//! Python to JSON accepts what `json.dumps` accepts by default (dict with
//! str keys, list, tuple, str, int, float, bool, None) and names the path
//! of anything else, so a bad spec says where it went wrong. Caller input
//! ([`input_to_json`]) is measured as it is converted and refused past
//! core's `MAX_INPUT_BYTES`, so a huge spec costs the interpreter lock
//! milliseconds, never its whole size.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// Deepest nesting accepted, so a self-referencing list fails cleanly.
const MAX_DEPTH: usize = 128;

/// A Python value JSON cannot hold (or, for caller input, one too large),
/// and where it was.
#[derive(Debug)]
pub struct NotJson {
    /// Path from the root, such as `$.until.matches` or `$[2]`.
    pub path: String,
    /// The rule it broke: `wrong_type`; `invalid_json` for a str that
    /// UTF-8 cannot hold ([`not_utf8`]); `too_large` for caller input.
    pub rule: waitfor::Rule,
    /// What was wrong.
    pub message: String,
}

impl NotJson {
    fn new(path: &str, message: impl Into<String>) -> Self {
        Self {
            path: path.to_string(),
            rule: waitfor::Rule::WrongType,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for NotJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            return f.write_str(&self.message);
        }
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl From<NotJson> for PyErr {
    fn from(err: NotJson) -> Self {
        PyTypeError::new_err(err.to_string())
    }
}

/// A host's Python object as JSON, or where it holds something JSON cannot.
pub fn to_json(obj: &Bound<'_, PyAny>) -> Result<Value, NotJson> {
    let mut unbounded = Budget::input(usize::MAX);
    to_json_at(obj, "$", 0, &mut unbounded)
}

/// A caller's input (a spec, a tool call's arguments, an envelope) as
/// JSON, refused with rule `too_large` once it passes core's
/// `MAX_INPUT_BYTES` (each value counts its text, or 8 bytes).
pub fn input_to_json(obj: &Bound<'_, PyAny>) -> Result<Value, NotJson> {
    let mut budget = Budget::input(waitfor::input::MAX_INPUT_BYTES);
    to_json_at(obj, "$", 0, &mut budget)
}

/// A probe's (or a host tool's) answer as JSON, given up with rule
/// `too_large` as soon as its compact JSON text is sure to pass `cap`
/// bytes: each value counts the least its text can take, so an answer
/// within the cap is never given up, and a huge one costs the interpreter
/// lock no more than the cap's worth.
pub fn output_to_json(obj: &Bound<'_, PyAny>, cap: usize) -> Result<Value, NotJson> {
    let mut budget = Budget {
        left: cap,
        measure: Measure::Output,
    };
    to_json_at(obj, "$", 0, &mut budget)
}

/// How a value's size is counted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Measure {
    /// Caller input: each value counts its text, or 8 bytes.
    Input,
    /// Output: each value counts the least its compact JSON text takes
    /// (`null`, `[`, the quotes of a str, a separator), never more.
    Output,
}

/// Bytes of JSON still allowed; every value takes its share.
struct Budget {
    left: usize,
    measure: Measure,
}

impl Budget {
    fn input(left: usize) -> Self {
        Self {
            left,
            measure: Measure::Input,
        }
    }

    /// Takes `bytes` from the budget, or refuses the value as too large.
    fn spend(&mut self, bytes: usize) -> Result<(), NotJson> {
        self.left = self.left.checked_sub(bytes).ok_or_else(|| NotJson {
            // The whole value, not one place in it: no path in the message.
            path: String::new(),
            rule: waitfor::Rule::TooLarge,
            message: match self.measure {
                Measure::Input => waitfor::input::too_large().message,
                Measure::Output => "larger than the output cap".to_string(),
            },
        })?;
        Ok(())
    }

    /// Takes a value's share: 8 bytes of input, or `json` bytes (the
    /// least its compact JSON text takes) of output.
    fn value(&mut self, json: usize) -> Result<(), NotJson> {
        self.spend(match self.measure {
            Measure::Input => 8,
            Measure::Output => json,
        })
    }

    /// Takes the share of an item of a list or dict beside its value: its
    /// separator in output, nothing in input (the value counts).
    fn item(&mut self) -> Result<(), NotJson> {
        self.spend(match self.measure {
            Measure::Input => 0,
            Measure::Output => 1,
        })
    }

    /// `s` as UTF-8, its bytes taken from the budget. A str longer than
    /// what is left is refused by its length before it is encoded: each
    /// code point takes at least one byte. The length is the string
    /// object's own, never `len(s)` (a `str` subclass's `__len__` may lie
    /// or raise); one that cannot be had counts as too large, not as 0.
    fn text(&mut self, s: &Bound<'_, PyString>, path: &str) -> Result<String, NotJson> {
        let chars = s.code_point_len().unwrap_or(usize::MAX);
        self.spend(chars)?;
        let s = text(s, path)?;
        self.spend(s.len().saturating_sub(chars))?;
        Ok(s)
    }
}

fn to_json_at(
    obj: &Bound<'_, PyAny>,
    path: &str,
    depth: usize,
    budget: &mut Budget,
) -> Result<Value, NotJson> {
    if depth > MAX_DEPTH {
        return Err(NotJson::new(
            path,
            format!("nested deeper than {MAX_DEPTH} levels"),
        ));
    }
    if obj.is_none() {
        budget.value(4)?;
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        let b = b.is_true();
        budget.value(if b { 4 } else { 5 })?;
        return Ok(Value::Bool(b));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        // Its quotes; escapes only add.
        budget.value(2)?;
        return Ok(Value::String(budget.text(s, path)?));
    }
    if obj.cast::<PyInt>().is_ok() {
        budget.value(1)?;
        let value = if let Ok(i) = obj.extract::<i64>() {
            Value::from(i)
        } else if let Ok(u) = obj.extract::<u64>() {
            Value::from(u)
        } else {
            return Err(NotJson::new(path, "integer does not fit in 64 bits"));
        };
        if budget.measure == Measure::Output {
            // Its other digits, and its sign.
            let (digits, sign) = match (value.as_i64(), value.as_u64()) {
                (Some(i), _) => (i.unsigned_abs().checked_ilog10(), usize::from(i < 0)),
                (None, Some(u)) => (u.checked_ilog10(), 0),
                _ => (None, 0),
            };
            budget.spend(digits.unwrap_or(0) as usize + sign)?;
        }
        return Ok(value);
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        // The shortest finite float text is three bytes (`0.0`, `1e9`).
        budget.value(3)?;
        return Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| NotJson::new(path, "NaN and infinity are not JSON"));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        // `{` and `}` count one byte, each entry one more (its separator).
        budget.value(1)?;
        let mut map = Map::new();
        for (k, v) in d.iter() {
            let key = k
                .cast::<PyString>()
                .map_err(|_| NotJson::new(path, "dict keys must be str for JSON"))?;
            budget.item()?;
            if budget.measure == Measure::Output {
                // Its quotes and colon.
                budget.spend(3)?;
            }
            let key = budget.text(key, path)?;
            let at = format!("{path}.{key}");
            map.insert(key, to_json_at(&v, &at, depth + 1, budget)?);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        budget.value(1)?;
        return items(l.iter(), path, depth, budget);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        budget.value(1)?;
        return items(t.iter(), path, depth, budget);
    }
    let kind = obj
        .get_type()
        .name()
        .map_or_else(|_| "value".to_string(), |n| n.to_string());
    Err(NotJson::new(
        path,
        format!("a {kind} is not JSON (use dict, list, str, int, float, bool or None)"),
    ))
}

fn text(s: &Bound<'_, PyString>, path: &str) -> Result<String, NotJson> {
    s.to_str().map(str::to_owned).map_err(|_| not_utf8(path))
}

/// The refusal of a `str` at `path` that UTF-8 cannot hold: it holds a
/// lone surrogate. Rule `invalid_json`, as core refuses a lone surrogate
/// escape (`"\ud800"`) in JSON text: the same fault, made in Python.
pub(crate) fn not_utf8(path: &str) -> NotJson {
    NotJson {
        rule: waitfor::Rule::InvalidJson,
        ..NotJson::new(
            path,
            "a str that is not valid UTF-8: it holds a lone surrogate (a code point from \
             U+D800 to U+DFFF is half of a pair and stands for no character alone)",
        )
    }
}

/// A `str` argument (`field`: its name) as UTF-8; one holding a lone
/// surrogate raises `SpecError` (`invalid_arguments`, rule
/// `invalid_json`), as such a str inside JSON input does, where pyo3's
/// own conversion raised a bare `UnicodeEncodeError`.
pub fn text_arg<'a>(
    py: Python<'_>,
    text: &'a Bound<'_, PyString>,
    field: &str,
) -> PyResult<&'a str> {
    text.to_str()
        .map_err(|_| crate::errors::not_json(py, &not_utf8(field), "invalid_arguments"))
}

fn items<'py>(
    iter: impl Iterator<Item = Bound<'py, PyAny>>,
    path: &str,
    depth: usize,
    budget: &mut Budget,
) -> Result<Value, NotJson> {
    iter.enumerate()
        .map(|(i, v)| {
            budget.item()?;
            to_json_at(&v, &format!("{path}[{i}]"), depth + 1, budget)
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// A JSON value as plain Python objects (dict, list, str, int, float,
/// bool, None).
pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let list = PyList::empty(py);
            for v in a {
                list.append(to_py(py, v)?)?;
            }
            list.into_any()
        }
        Value::Object(o) => {
            let dict = PyDict::new(py);
            for (k, v) in o {
                dict.set_item(k, to_py(py, v)?)?;
            }
            dict.into_any()
        }
    })
}
