//! Host command templates for `resume` and `next`: the host writes the
//! command line once, the wait fills in the cursor.

use super::envelope::NextStep;

/// Why a template could not be read or filled in.
///
/// ```
/// use waitfor::ouro::{CommandTemplate, TemplateError};
/// assert!(matches!(CommandTemplate::parse("x {nope}"),
///                  Err(TemplateError::UnknownPlaceholder { .. })));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// `{name}` where `name` is not a known placeholder.
    #[error("template: unknown placeholder {{{name}}} (known: {{cursor}}; write {{{{ and }}}} for braces)")]
    UnknownPlaceholder {
        /// The placeholder's name.
        name: String,
    },
    /// A `{` without its `}`, or a lone `}`.
    #[error("template: unbalanced brace at byte {at} (write {{{{ and }}}} for literal braces)")]
    Unbalanced {
        /// Byte offset of the brace in the template.
        at: usize,
    },
    /// The template is empty or only whitespace.
    #[error("template: must not be empty")]
    Empty,
    /// The template names `{cursor}` but there is no cursor to fill in.
    #[error("template: needs a cursor, and there is none")]
    NoCursor,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Cursor,
}

/// A command line with placeholders, such as
/// `"waitfor events log.jsonl --cursor {cursor}"`.
///
/// Placeholders: `{cursor}`, replaced by the cursor, shell-quoted when it
/// holds anything but `A-Z a-z 0-9 _ - . , : / = + @ %` (single quotes, with
/// `'` written `'\''`), so the result is one shell word whatever the cursor
/// holds. `{{` and `}}` write literal braces; any other `{...}` is an error
/// when the template is parsed, not when it is used.
///
/// ```
/// use waitfor::ouro::CommandTemplate;
/// let t = CommandTemplate::parse("waitfor events log.jsonl --cursor {cursor}").unwrap();
/// assert_eq!(t.render(Some("j1.10.0.0.0")).unwrap(),
///            "waitfor events log.jsonl --cursor j1.10.0.0.0");
/// assert_eq!(t.render(Some("it's")).unwrap(),
///            r#"waitfor events log.jsonl --cursor 'it'\''s'"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandTemplate {
    parts: Vec<Part>,
}

impl CommandTemplate {
    /// Reads a template, checking its placeholders.
    ///
    /// ```
    /// use waitfor::ouro::CommandTemplate;
    /// assert!(CommandTemplate::parse("echo {{literal}}").is_ok());
    /// assert!(CommandTemplate::parse("echo {cursor").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<CommandTemplate, TemplateError> {
        if text.trim().is_empty() {
            return Err(TemplateError::Empty);
        }
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text.char_indices().peekable();
        while let Some((at, c)) = rest.next() {
            match c {
                '{' if rest.peek().map(|p| p.1) == Some('{') => {
                    rest.next();
                    literal.push('{');
                }
                '}' if rest.peek().map(|p| p.1) == Some('}') => {
                    rest.next();
                    literal.push('}');
                }
                '{' => {
                    let close = text[at..]
                        .find('}')
                        .ok_or(TemplateError::Unbalanced { at })?;
                    let name = &text[at + 1..at + close];
                    if name != "cursor" {
                        return Err(TemplateError::UnknownPlaceholder {
                            name: name.to_string(),
                        });
                    }
                    if !literal.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut literal)));
                    }
                    parts.push(Part::Cursor);
                    while rest.next_if(|p| p.0 <= at + close).is_some() {}
                }
                '}' => return Err(TemplateError::Unbalanced { at }),
                _ => literal.push(c),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Ok(CommandTemplate { parts })
    }

    /// Whether the template uses `{cursor}`.
    ///
    /// ```
    /// use waitfor::ouro::CommandTemplate;
    /// assert!(!CommandTemplate::parse("make test").unwrap().uses_cursor());
    /// ```
    pub fn uses_cursor(&self) -> bool {
        self.parts.contains(&Part::Cursor)
    }

    /// The command line with the cursor filled in, shell-quoted as needed;
    /// [`TemplateError::NoCursor`] when it uses `{cursor}` and `cursor` is
    /// `None`.
    ///
    /// ```
    /// use waitfor::ouro::CommandTemplate;
    /// let t = CommandTemplate::parse("tail --from {cursor}").unwrap();
    /// assert_eq!(t.render(Some("a b")).unwrap(), "tail --from 'a b'");
    /// assert!(t.render(None).is_err());
    /// ```
    pub fn render(&self, cursor: Option<&str>) -> Result<String, TemplateError> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Cursor => out.push_str(&shell_quote(cursor.ok_or(TemplateError::NoCursor)?)),
            }
        }
        Ok(out)
    }

    /// A [`NextStep`] running the rendered command, with a description.
    ///
    /// ```
    /// use waitfor::ouro::CommandTemplate;
    /// let t = CommandTemplate::parse("waitfor events log.jsonl --cursor {cursor}").unwrap();
    /// let step = t.step(Some("j1.0.0.0.0"), Some("wait again from the same cursor")).unwrap();
    /// assert_eq!(step.command, "waitfor events log.jsonl --cursor j1.0.0.0.0");
    /// ```
    pub fn step(
        &self,
        cursor: Option<&str>,
        description: Option<&str>,
    ) -> Result<NextStep, TemplateError> {
        let step = NextStep::new(self.render(cursor)?);
        Ok(match description {
            Some(d) => step.with_description(d),
            None => step,
        })
    }
}

/// One shell word for `s` (POSIX sh): unchanged when it holds only
/// `A-Z a-z 0-9 _ - . , : / = + @ %` and is not empty, else single-quoted.
///
/// ```
/// use waitfor::ouro::shell_quote;
/// assert_eq!(shell_quote("j1.0.0.0.0"), "j1.0.0.0.0");
/// assert_eq!(shell_quote(""), "''");
/// assert_eq!(shell_quote("$(rm -rf /)"), "'$(rm -rf /)'");
/// ```
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.,:/=+@%".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn braces_and_errors() {
        let t = CommandTemplate::parse("x {{y}} {cursor}{cursor}").unwrap();
        assert_eq!(t.render(Some("c")).unwrap(), "x {y} cc");
        assert_eq!(
            CommandTemplate::parse("a } b"),
            Err(TemplateError::Unbalanced { at: 2 })
        );
        assert_eq!(CommandTemplate::parse("  "), Err(TemplateError::Empty));
        assert_eq!(
            CommandTemplate::parse("{}"),
            Err(TemplateError::UnknownPlaceholder {
                name: String::new()
            })
        );
        let plain = CommandTemplate::parse("make").unwrap();
        assert_eq!(plain.render(None).unwrap(), "make");
    }

    #[test]
    fn odd_cursor_is_one_word() {
        assert_eq!(shell_quote("a\nb"), "'a\nb'");
    }
}
