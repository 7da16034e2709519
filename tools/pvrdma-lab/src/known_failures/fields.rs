// SPDX-License-Identifier: GPL-2.0-only
//! The keys of one table of `known-failures.toml`, read as what they say (a model, a
//! driver, a frame, ...) and checked: every error names the entry and its line, and a key
//! left unread is an unknown key, not one quietly ignored.

use crate::cli::Driver;
use crate::model::DeviceModel;
use crate::reference_bugs::Owner;
use crate::toml_subset::{KeyValue, Table, Value};

/// Whether `id` is an entry's id: lowercase letters, digits and inner dashes (it names the
/// entry's fixture directory).
fn is_id(id: &str) -> bool {
    !id.is_empty()
        && !id.starts_with('-')
        && !id.ends_with('-')
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Whether `frame` has the shape of a call trace's reliable frame as the matcher reads it
/// (`function+`, `function+ [module]`): any other shape would match no trace.
fn is_frame(frame: &str) -> bool {
    let symbol = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
    };
    let Some((function, rest)) = frame.split_once('+') else {
        return false;
    };
    let module_ok = match rest.strip_prefix(" [") {
        Some(module) => module.strip_suffix(']').is_some_and(symbol),
        None => rest.is_empty(),
    };
    symbol(function) && module_ok
}

/// A table's keys, taken one by one: what is left at the end is an unknown key.
pub struct Fields<'t> {
    /// The table.
    pub table: &'t Table,
    /// The entry's id (its form's id, for a form).
    pub id: String,
    /// The keys taken so far.
    taken: Vec<&'t str>,
}

impl<'t> Fields<'t> {
    /// The fields of `table`, its id taken.
    pub fn new(table: &'t Table) -> Result<Fields<'t>, String> {
        let mut fields = Fields {
            table,
            id: String::new(),
            taken: Vec::new(),
        };
        let id = match fields.take("id") {
            Some(KeyValue {
                value: Value::String(id),
                ..
            }) => id.clone(),
            Some(KeyValue { line, .. }) => {
                let line = *line;
                return Err(format!(
                    "line {line}: [[{}]]: its id is not a string",
                    table.name
                ));
            }
            None => {
                return Err(format!(
                    "line {}: [[{}]] without an id",
                    table.line, table.name
                ))
            }
        };
        fields.id = id;
        if !is_id(&fields.id) {
            return Err(fields.error(
                fields.line_of("id"),
                "an id is lowercase letters, digits and inner dashes",
            ));
        }
        Ok(fields)
    }

    /// An error on `line` of this entry.
    pub fn error(&self, line: usize, what: &str) -> String {
        format!("line {line}: [[{}]] '{}': {what}", self.table.name, self.id)
    }

    /// The value of `key`, if any, taken.
    fn take(&mut self, key: &'t str) -> Option<&'t KeyValue> {
        let found = self.table.keys.iter().find(|k| k.key == key)?;
        self.taken.push(key);
        Some(found)
    }

    /// The line of `key`, or of the table's header if it has none.
    pub fn line_of(&self, key: &str) -> usize {
        self.table
            .keys
            .iter()
            .find(|k| k.key == key)
            .map_or(self.table.line, |k| k.line)
    }

    fn required(&mut self, key: &'t str) -> Result<&'t KeyValue, String> {
        self.take(key)
            .ok_or_else(|| self.error(self.table.line, &format!("no {key}")))
    }

    fn string(&mut self, key: &'t str) -> Result<(String, usize), String> {
        let found = self.required(key)?;
        match &found.value {
            Value::String(text) => Ok((text.clone(), found.line)),
            other => Err(self.error(
                found.line,
                &format!("{key} is {}, not a string", other.kind()),
            )),
        }
    }

    /// Text a log must contain: not blank (blank text is in every log).
    pub fn pattern(&mut self, key: &'t str) -> Result<String, String> {
        let (text, line) = self.string(key)?;
        if text.trim().is_empty() {
            return Err(self.error(line, &format!("{key} is blank: it would match anything")));
        }
        Ok(text)
    }

    /// Whether the table has `key`.
    pub fn has(&self, key: &str) -> bool {
        self.table.keys.iter().any(|k| k.key == key)
    }

    /// A [`pattern`](Fields::pattern) the entry may leave out.
    pub fn optional_pattern(&mut self, key: &'t str) -> Result<Option<String>, String> {
        if !self.has(key) {
            return Ok(None);
        }
        self.pattern(key).map(Some)
    }

    /// A cause, a reason: said, without stray spaces around it.
    pub fn prose(&mut self, key: &'t str) -> Result<String, String> {
        let (text, line) = self.string(key)?;
        if text.trim().is_empty() {
            return Err(self.error(line, &format!("{key} is empty: say why")));
        }
        if text.trim() != text {
            return Err(self.error(line, &format!("{key} starts or ends with white space")));
        }
        Ok(text)
    }

    pub fn boolean(&mut self, key: &'t str) -> Result<bool, String> {
        let found = self.required(key)?;
        match found.value {
            Value::Bool(value) => Ok(value),
            ref other => Err(self.error(
                found.line,
                &format!("{key} is {}, not true or false", other.kind()),
            )),
        }
    }

    pub fn model(&mut self) -> Result<DeviceModel, String> {
        let (name, line) = self.string("model")?;
        DeviceModel::parse(&name).map_err(|why| self.error(line, &why))
    }

    /// `driver`: `either` is None.
    pub fn driver(&mut self) -> Result<Option<Driver>, String> {
        let (name, line) = self.string("driver")?;
        match name.as_str() {
            "either" => Ok(None),
            "c" => Ok(Some(Driver::C)),
            "rust" => Ok(Some(Driver::Rust)),
            _ => Err(self.error(
                line,
                &format!("unknown driver '{name}' (known: either, c, rust)"),
            )),
        }
    }

    pub fn owner(&mut self) -> Result<Owner, String> {
        let (name, line) = self.string("owner")?;
        match name.as_str() {
            "c-driver" => Ok(Owner::CDriver),
            "kernel" => Ok(Owner::Kernel),
            _ => Err(self.error(
                line,
                &format!("unknown owner '{name}' (known: c-driver, kernel)"),
            )),
        }
    }

    /// A test's name, as tests/guest/tests/NAME.sh has it.
    pub fn test_name(&mut self, key: &'t str) -> Result<String, String> {
        let (name, line) = self.string(key)?;
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !valid {
            return Err(self.error(line, &format!("'{name}' is not a test's name")));
        }
        Ok(name)
    }

    /// An array of strings, each checked by `check` (which says what is wrong with it).
    fn strings(
        &mut self,
        key: &'t str,
        check: impl Fn(&str) -> Option<String>,
    ) -> Result<Vec<String>, String> {
        let found = self.required(key)?;
        let Value::Array(values) = &found.value else {
            return Err(self.error(
                found.line,
                &format!("{key} is {}, not an array", found.value.kind()),
            ));
        };
        if values.is_empty() {
            return Err(self.error(found.line, &format!("{key} is empty: it would match any")));
        }
        values
            .iter()
            .map(|value| match value {
                Value::String(text) => match check(text) {
                    Some(why) => Err(self.error(found.line, &format!("{key}: {why}"))),
                    None => Ok(text.clone()),
                },
                other => Err(self.error(
                    found.line,
                    &format!("{key} holds {}, not a string", other.kind()),
                )),
            })
            .collect()
    }

    pub fn frames(&mut self, key: &'t str) -> Result<Vec<String>, String> {
        self.strings(key, |frame| {
            (!is_frame(frame)).then(|| {
                format!(
                    "'{frame}' is not a frame as a call trace's reliable frames read \
                     ('function+' or 'function+ [module]')"
                )
            })
        })
    }

    /// `header`: each element a text or an array of alternative texts, none blank.
    pub fn header(&mut self) -> Result<Vec<Vec<String>>, String> {
        let found = self.required("header")?;
        let blank = |text: &String| text.trim().is_empty();
        let Value::Array(values) = &found.value else {
            return Err(self.error(found.line, "header is not an array"));
        };
        let header: Option<Vec<Vec<String>>> = values
            .iter()
            .map(|value| match value {
                Value::String(text) if !blank(text) => Some(vec![text.clone()]),
                Value::Array(alternatives) if !alternatives.is_empty() => alternatives
                    .iter()
                    .map(|alternative| match alternative {
                        Value::String(text) if !blank(text) => Some(text.clone()),
                        _ => None,
                    })
                    .collect(),
                _ => None,
            })
            .collect();
        match header {
            Some(header) if !header.is_empty() => Ok(header),
            _ => Err(self.error(
                found.line,
                "header must hold texts, or arrays of alternative texts, none blank",
            )),
        }
    }

    /// Done: a key not taken is unknown.
    pub fn finish(&self) -> Result<(), String> {
        match self
            .table
            .keys
            .iter()
            .find(|k| !self.taken.contains(&k.key.as_str()))
        {
            Some(unknown) => {
                Err(self.error(unknown.line, &format!("unknown key '{}'", unknown.key)))
            }
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_have_the_shape_of_a_reliable_frame() {
        for frame in ["kfree+", "pvrdma_intr0_handler+ [vmw_pvrdma]", "foo.cold+"] {
            assert!(is_frame(frame), "{frame}");
        }
        for frame in [
            "kfree",
            "kfree+0x10",
            "+",
            "f+ vmw_pvrdma",
            "f+ [vmw pvrdma]",
            "f+ []",
        ] {
            assert!(!is_frame(frame), "{frame}");
        }
    }
}
