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

/// An on/off switch: `0` or `off` off, `1` or `on` on (see [`switch`]).
pub fn on_off(name: &str, default: bool) -> bool {
    switch(name, &ON_OFF, default, on_off_default_is(default))
}

/// The values of an on/off switch.
const ON_OFF: [(&str, bool); 4] = [("0", false), ("1", true), ("off", false), ("on", true)];

/// How the warning names an on/off switch's default.
const fn on_off_default_is(default: bool) -> &'static str {
    if default {
        "on"
    } else {
        "off"
    }
}

/// A switch read once a process (the first [`Switch::get`] reads the
/// variable, as [`switch`] does; later ones return that choice), declared
/// as a `static` beside the function that asks for it.
pub struct Switch<T: 'static> {
    name: &'static str,
    choices: &'static [(&'static str, T)],
    default: T,
    default_is: &'static str,
    choice: std::sync::OnceLock<T>,
}

impl<T: Copy> Switch<T> {
    /// The switch `name` with its `choices` and `default` (described as
    /// `default_is` in the warning), not yet read.
    pub const fn new(
        name: &'static str,
        choices: &'static [(&'static str, T)],
        default: T,
        default_is: &'static str,
    ) -> Switch<T> {
        Switch {
            name,
            choices,
            default,
            default_is,
            choice: std::sync::OnceLock::new(),
        }
    }

    /// This process's choice (the variable read on the first call).
    pub fn get(&self) -> T {
        *self
            .choice
            .get_or_init(|| switch(self.name, self.choices, self.default, self.default_is))
    }
}

impl Switch<bool> {
    /// An on/off switch (see [`on_off`]), not yet read.
    pub const fn on_off(name: &'static str, default: bool) -> Switch<bool> {
        Switch::new(name, &ON_OFF, default, on_off_default_is(default))
    }
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
    use super::{pick, Switch, ON_OFF};

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

    #[test]
    fn draft_pad_off_was_not_read_an_on_off_switch_takes_on_and_off_as_words() {
        // `SPECULA_DRAFT_PAD=off` once ran padded with only a warning: the
        // docs spell on/off switches with words as often as with digits.
        assert_eq!(pick(Some("off"), &ON_OFF), Ok(Some(false)));
        assert_eq!(pick(Some("on"), &ON_OFF), Ok(Some(true)));
        assert_eq!(pick(Some("0"), &ON_OFF), Ok(Some(false)));
        assert_eq!(pick(Some("1"), &ON_OFF), Ok(Some(true)));
        assert_eq!(pick(Some("Off"), &ON_OFF), Err("Off"));
    }

    #[test]
    fn a_switch_reads_its_variable_once_and_keeps_that_choice() {
        // A variable of this test's own (the environment is the process's).
        static ONCE: Switch<u8> = Switch::new("SPECULA_TEST_SWITCH_ONCE", &CHOICES, 1, "1");
        std::env::set_var("SPECULA_TEST_SWITCH_ONCE", "late");
        assert_eq!(ONCE.get(), 2);
        std::env::set_var("SPECULA_TEST_SWITCH_ONCE", "0");
        assert_eq!(ONCE.get(), 2);
        static UNSET: Switch<bool> = Switch::on_off("SPECULA_TEST_SWITCH_UNSET", true);
        assert!(UNSET.get());
    }
}
