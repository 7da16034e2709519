// SPDX-License-Identifier: GPL-2.0-only
//! A strict subset of TOML, enough for the lab's data file (`known-failures.toml`) and no
//! more: the lab builds offline from the crates in tools/Cargo.lock, which has no TOML
//! parser. What this reads, a TOML parser reads the same; what it does not know it refuses
//! with the line, rather than reading it some other way.
//!
//! The subset: `#` comments; array-of-tables headers (`[[name]]`, `[[name.sub]]`), each
//! followed by `key = value` lines with bare keys; values are basic strings (`"..."`, escapes
//! `\"` and `\\` only), literal strings (`'...'`), multi-line basic strings (`"""..."""`,
//! whose line-ending backslash joins lines as in Rust), `true`/`false`, and arrays of these
//! (nested, across lines, a trailing comma allowed).

/// A value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A string.
    String(String),
    /// `true` or `false`.
    Bool(bool),
    /// An array.
    Array(Vec<Value>),
}

impl Value {
    /// What kind of value it is, for errors.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::String(_) => "a string",
            Value::Bool(_) => "a boolean",
            Value::Array(_) => "an array",
        }
    }
}

/// One `key = value` line.
#[derive(Debug)]
pub struct KeyValue {
    /// The key.
    pub key: String,
    /// The value.
    pub value: Value,
    /// Its line (1-based).
    pub line: usize,
}

/// One `[[name]]` table and its keys, in the order written.
#[derive(Debug)]
pub struct Table {
    /// Its header's name (`reference_bug.form` for `[[reference_bug.form]]`).
    pub name: String,
    /// The header's line (1-based).
    pub line: usize,
    /// Its keys.
    pub keys: Vec<KeyValue>,
}

/// The tables of `text`, in order; an error says the line and what is wrong there.
pub fn parse(text: &str) -> Result<Vec<Table>, String> {
    let mut cursor = Cursor {
        rest: text,
        line: 1,
    };
    let mut tables: Vec<Table> = Vec::new();
    loop {
        cursor.skip_blank_lines()?;
        if cursor.rest.is_empty() {
            return Ok(tables);
        }
        let line = cursor.line;
        if cursor.eat("[[") {
            let name = cursor.header_name()?;
            cursor.end_of_line()?;
            tables.push(Table {
                name,
                line,
                keys: Vec::new(),
            });
            continue;
        }
        if cursor.rest.starts_with('[') {
            return Err(format!(
                "line {line}: only array-of-tables headers ([[name]]) are supported"
            ));
        }
        let key = cursor.bare_key()?;
        cursor.skip_spaces();
        if !cursor.eat("=") {
            return Err(format!("line {line}: expected '=' after the key '{key}'"));
        }
        cursor.skip_spaces();
        let value = cursor.value()?;
        cursor.end_of_line()?;
        let Some(table) = tables.last_mut() else {
            return Err(format!(
                "line {line}: the key '{key}' stands before any [[table]] header"
            ));
        };
        if table.keys.iter().any(|k| k.key == key) {
            return Err(format!("line {line}: the key '{key}' is given twice"));
        }
        table.keys.push(KeyValue { key, value, line });
    }
}

/// Where parsing stands: the text not read yet, and its line.
struct Cursor<'a> {
    rest: &'a str,
    line: usize,
}

/// Whether `c` may stand in a bare key.
fn is_bare_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

impl Cursor<'_> {
    fn error<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("line {}: {what}", self.line))
    }

    /// Takes `prefix` if the text continues with it.
    fn eat(&mut self, prefix: &str) -> bool {
        match self.rest.strip_prefix(prefix) {
            Some(rest) => {
                self.line += prefix.matches('\n').count();
                self.rest = rest;
                true
            }
            None => false,
        }
    }

    /// Takes the next character.
    fn next_char(&mut self) -> Option<char> {
        let c = self.rest.chars().next()?;
        self.rest = &self.rest[c.len_utf8()..];
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn skip_spaces(&mut self) {
        self.rest = self.rest.trim_start_matches([' ', '\t']);
    }

    /// Skips a comment up to (not including) the end of its line.
    fn skip_comment(&mut self) {
        if self.rest.starts_with('#') {
            let end = self.rest.find('\n').unwrap_or(self.rest.len());
            self.rest = &self.rest[end..];
        }
    }

    /// Skips spaces, comments and line ends: between an array's elements, and between lines.
    fn skip_blank_lines(&mut self) -> Result<(), String> {
        loop {
            self.skip_spaces();
            self.skip_comment();
            if self.rest.starts_with('\r') {
                return self.error("a carriage return (the file must have Unix line ends)");
            }
            if !self.eat("\n") {
                return Ok(());
            }
        }
    }

    /// The rest of a line after its value or header: spaces, a comment, its end.
    fn end_of_line(&mut self) -> Result<(), String> {
        self.skip_spaces();
        self.skip_comment();
        if self.rest.is_empty() || self.eat("\n") {
            Ok(())
        } else {
            self.error("expected the end of the line")
        }
    }

    fn bare_key(&mut self) -> Result<String, String> {
        let end = self
            .rest
            .find(|c| !is_bare_key_char(c))
            .unwrap_or(self.rest.len());
        if end == 0 {
            return self.error("expected a bare key (letters, digits, '_', '-')");
        }
        let key = self.rest[..end].to_string();
        self.rest = &self.rest[end..];
        Ok(key)
    }

    /// The name of a `[[name]]` header, its `[[` taken: bare keys joined by dots.
    fn header_name(&mut self) -> Result<String, String> {
        let mut parts = vec![self.bare_key()?];
        while self.eat(".") {
            parts.push(self.bare_key()?);
        }
        if !self.eat("]]") {
            return self.error("expected ']]' to close the table header");
        }
        Ok(parts.join("."))
    }

    fn value(&mut self) -> Result<Value, String> {
        if self.eat("\"\"\"") {
            return self.multi_line_string().map(Value::String);
        }
        if self.eat("\"") {
            return self.basic_string().map(Value::String);
        }
        if self.rest.starts_with("'''") {
            return self.error("multi-line literal strings (''') are not supported");
        }
        if self.eat("'") {
            return self.literal_string().map(Value::String);
        }
        if self.eat("[") {
            return self.array().map(Value::Array);
        }
        let word = self
            .rest
            .find(|c| !is_bare_key_char(c))
            .map_or(self.rest, |end| &self.rest[..end]);
        match word {
            "true" | "false" => {
                self.rest = &self.rest[word.len()..];
                Ok(Value::Bool(word == "true"))
            }
            _ => self.error("expected a string, a boolean or an array"),
        }
    }

    /// An escape's character, its backslash taken: only `\"` and `\\`.
    fn escape(&mut self) -> Result<char, String> {
        match self.next_char() {
            Some(c @ ('"' | '\\')) => Ok(c),
            Some(c) => self.error(&format!("the escape '\\{c}' is not supported")),
            None => self.error("the text ends inside a string"),
        }
    }

    /// A `"..."` string, its opening quote taken.
    fn basic_string(&mut self) -> Result<String, String> {
        let line = self.line;
        let mut text = String::new();
        loop {
            match self.next_char() {
                Some('"') => return Ok(text),
                Some('\\') => text.push(self.escape()?),
                Some('\n') | None => {
                    return Err(format!("line {line}: a string not closed on its line"))
                }
                Some(c) if c.is_control() && c != '\t' => {
                    return self.error("a control character in a string")
                }
                Some(c) => text.push(c),
            }
        }
    }

    /// A `'...'` string, its opening quote taken: no escapes.
    fn literal_string(&mut self) -> Result<String, String> {
        let end = self
            .rest
            .find(['\'', '\n'])
            .filter(|&end| self.rest[end..].starts_with('\''));
        let Some(end) = end else {
            return self.error("a literal string not closed on its line");
        };
        let text = self.rest[..end].to_string();
        self.rest = &self.rest[end + 1..];
        Ok(text)
    }

    /// A `"""..."""` string, its opening quotes taken. A line end right after the opening
    /// quotes is not part of it; a backslash ending a line takes the line end and the spaces
    /// and line ends after it.
    fn multi_line_string(&mut self) -> Result<String, String> {
        let start = self.line;
        self.eat("\n");
        let mut text = String::new();
        loop {
            if self.eat("\"\"\"") {
                if self.rest.starts_with('"') {
                    return self.error("quotes just inside a closing \"\"\" are not supported");
                }
                return Ok(text);
            }
            match self.next_char() {
                Some('\\') => {
                    let after = self.rest.trim_start_matches([' ', '\t']);
                    if after.starts_with('\n') {
                        self.rest = after;
                        while let Some(c) = self.rest.chars().next() {
                            if !c.is_whitespace() {
                                break;
                            }
                            self.next_char();
                        }
                    } else {
                        text.push(self.escape()?);
                    }
                }
                Some(c) if c.is_control() && c != '\t' && c != '\n' => {
                    return self.error("a control character in a string")
                }
                Some(c) => text.push(c),
                None => {
                    return Err(format!(
                        "line {start}: a \"\"\" string not closed before the end of the file"
                    ))
                }
            }
        }
    }

    /// An array, its `[` taken.
    fn array(&mut self) -> Result<Vec<Value>, String> {
        let mut values = Vec::new();
        loop {
            self.skip_blank_lines()?;
            if self.eat("]") {
                return Ok(values);
            }
            values.push(self.value()?);
            self.skip_blank_lines()?;
            if self.eat("]") {
                return Ok(values);
            }
            if !self.eat(",") {
                return self.error("expected ',' or ']' in an array");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(text: &str) -> Value {
        Value::String(text.to_string())
    }

    #[test]
    fn reads_tables_keys_and_values() {
        let text = "\
# a comment

[[bug]]   # after a header
id = \"one\" # after a value
quoted = \"say \\\"hi\\\" \\\\ \"
literal = '\" a \\ b \"'
flag = true
cause = \"\"\"
The first line, \\
   joined to the second; an escaped \\\"quote\\\".
A kept line end.\"\"\"
lists = [
  \"a\",  # a comment in an array
  ['b', \"c\"],
]

[[bug.form]]
empty = []
";
        let tables = parse(text).unwrap();
        assert_eq!(tables.len(), 2);
        assert_eq!((tables[0].name.as_str(), tables[0].line), ("bug", 3));
        assert_eq!((tables[1].name.as_str(), tables[1].line), ("bug.form", 17));
        let values: Vec<(&str, &Value, usize)> = tables[0]
            .keys
            .iter()
            .map(|k| (k.key.as_str(), &k.value, k.line))
            .collect();
        assert_eq!(
            values,
            [
                ("id", &string("one"), 4),
                ("quoted", &string("say \"hi\" \\ "), 5),
                ("literal", &string("\" a \\ b \""), 6),
                ("flag", &Value::Bool(true), 7),
                (
                    "cause",
                    &string(
                        "The first line, joined to the second; an escaped \"quote\".\n\
                         A kept line end."
                    ),
                    8
                ),
                (
                    "lists",
                    &Value::Array(vec![
                        string("a"),
                        Value::Array(vec![string("b"), string("c")])
                    ]),
                    12
                ),
            ]
        );
        assert_eq!(tables[1].keys[0].value, Value::Array(Vec::new()));
        assert_eq!(tables[1].keys[0].line, 18);
    }

    #[test]
    fn refuses_what_it_does_not_know_with_the_line() {
        for (text, error) in [
            (
                "id = \"x\"\n",
                "line 1: the key 'id' stands before any [[table]] header",
            ),
            (
                "[bug]\n",
                "line 1: only array-of-tables headers ([[name]]) are supported",
            ),
            (
                "[[bug]]\nid = 'x'\nid = 'y'\n",
                "line 3: the key 'id' is given twice",
            ),
            (
                "[[bug]]\nid = \"x\\n\"\n",
                "line 2: the escape '\\n' is not supported",
            ),
            (
                "[[bug]]\nid = \"x\n",
                "line 2: a string not closed on its line",
            ),
            (
                "[[bug]]\nid = 'x\n",
                "line 2: a literal string not closed on its line",
            ),
            (
                "[[bug]]\nid = 3\n",
                "line 2: expected a string, a boolean or an array",
            ),
            (
                "[[bug]]\nid = \"x\" y\n",
                "line 2: expected the end of the line",
            ),
            (
                "[[bug]]\na.b = true\n",
                "line 2: expected '=' after the key 'a'",
            ),
            (
                "[[bug]]\nid = [\"a\"\n\"b\"]\n",
                "line 3: expected ',' or ']' in an array",
            ),
            (
                "[[bug]]\n\nid = \"\"\"\nx\n",
                "line 3: a \"\"\" string not closed before",
            ),
            (
                "[[bug]]\nid = \"\"\"x\"\"\"\"\n",
                "line 2: quotes just inside a closing",
            ),
            ("[[bug]]\r\n", "line 1: expected the end of the line"),
            ("[[bug]]\n\r\n", "line 2: a carriage return"),
            (
                "[[bug]\n",
                "line 1: expected ']]' to close the table header",
            ),
            (
                "[[bug]]\nid = '''x'''\n",
                "line 2: multi-line literal strings",
            ),
        ] {
            let got = parse(text).unwrap_err();
            assert!(got.starts_with(error), "{text:?}: {got}");
        }
    }
}
