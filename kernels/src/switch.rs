//! The engine's switches: `SPECULA_*` environment variables that pick a
//! kernel form or turn a measure off, for comparing forms (every form of a
//! switch gives the same bits unless its own doc says otherwise). Each is
//! read through [`switch`]: a value among the switch's choices takes that
//! choice; unset or empty, the default; anything else prints a warning that
//! names the variable, its choices and the default, and takes the default
//! (a typo never silently turns a form on or off).

/// The choice the environment variable `name` names: `choices` maps each
/// accepted value to its choice; `default` (described as `default_is` in
/// the warning) when the variable is unset, empty or none of the values.
pub fn switch<T: Copy>(name: &str, choices: &[(&str, T)], default: T, default_is: &str) -> T {
    let value = std::env::var(name).ok();
    match pick(value.as_deref(), choices) {
        Ok(choice) => choice.unwrap_or(default),
        Err(other) => {
            let names: Vec<&str> = choices.iter().map(|(v, _)| *v).collect();
            eprintln!(
                "warning: {name}={other} is none of {}: the default ({default_is})",
                names.join(", ")
            );
            default
        }
    }
}

/// An on/off switch: `0` off, `1` on (see [`switch`]).
pub fn on_off(name: &str, default: bool) -> bool {
    let default_is = if default { "on" } else { "off" };
    switch(name, &[("0", false), ("1", true)], default, default_is)
}

/// `value`'s choice: `Ok(None)` for no value (unset or empty), `Err` with
/// the value when it is none of `choices`.
fn pick<'v, T: Copy>(value: Option<&'v str>, choices: &[(&str, T)]) -> Result<Option<T>, &'v str> {
    match value {
        None | Some("") => Ok(None),
        Some(v) => choices
            .iter()
            .find(|(accepted, _)| *accepted == v)
            .map(|(_, choice)| Some(*choice))
            .ok_or(v),
    }
}

#[cfg(test)]
mod tests {
    use super::pick;

    const CHOICES: [(&str, u8); 2] = [("0", 0), ("late", 2)];

    #[test]
    fn an_accepted_value_takes_its_choice() {
        assert_eq!(pick(Some("late"), &CHOICES), Ok(Some(2)));
        assert_eq!(pick(Some("0"), &CHOICES), Ok(Some(0)));
    }

    #[test]
    fn unset_or_empty_leaves_the_default() {
        assert_eq!(pick(None, &CHOICES), Ok(None));
        assert_eq!(pick(Some(""), &CHOICES), Ok(None));
    }

    #[test]
    fn any_other_value_is_refused_with_itself_even_a_near_miss() {
        assert_eq!(pick(Some("Late"), &CHOICES), Err("Late"));
        assert_eq!(pick(Some("off"), &CHOICES), Err("off"));
        assert_eq!(pick(Some(" 0"), &CHOICES), Err(" 0"));
    }
}
