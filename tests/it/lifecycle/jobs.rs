//! Jobs: a command stopped with Ctrl-Z and resumed with `fg`, in a pane
//! out of sight and under the person's eyes; a shell replaced by `exec`.

use super::Day;
use crate::attention_plugin::ask;

#[test]
fn a_job_stopped_and_resumed_and_a_shell_replaced_by_exec() {
    let mut d = Day::start("");
    // Out of sight: a long command stopped is the shell back at its
    // prompt (marked, told); resumed, it works again (the mark goes).
    let p = d.window();
    d.s.type_line(&p, "sleep 900");
    d.s.wait_for_command(&p, "sleep");
    d.idle("a silent command past the quiet time");
    let n = d.any.count();
    d.s.tmux(&["send-keys", "-t", &p, "C-z"]);
    d.any.wait(n, &p, "prompt");
    d.wait_segment(&p, "⚑1 main:1 prompt");
    d.idle("Ctrl-Z of a running command");
    let n = d.any.count();
    d.s.type_line(&p, "fg");
    d.any.wait(n, &p, "working");
    d.wait_segment(&p, "");
    d.idle("fg of a stopped command");
    d.s.tmux(&["send-keys", "-t", &p, "C-c"]);
    d.s.wait_for_prompt(&p);

    // A question stopped and resumed: it asks the same question again,
    // and is marked with it (not with the shell's echo of the job).
    ask(&d.s, &p, "Deploy? [y/N]");
    d.wait_segment(&p, "⚑1 main:1 asking");
    d.s.tmux(&["send-keys", "-t", &p, "C-z"]);
    d.wait_segment(&p, "⚑1 main:1 prompt");
    let n = d.any.count();
    d.s.type_line(&p, "fg");
    let said = d.any.wait(n, &p, "asking");
    assert_eq!(said["question"], "Deploy? [y/N]", "{said}");
    d.wait_segment(&p, "⚑1 main:1 asking");
    assert!(
        d.menu()
            .contains(&format!("go to {p} main:1 asking: Deploy? [y/N]")),
        "the menu"
    );
    d.idle("fg of a stopped question");

    // The same under the person's eyes: they go there, stop it, resume
    // it and leave it unanswered: marked once they leave, with its
    // question, and not told (they saw it).
    let told = d.notifications().len();
    d.person.prefixed(&d.s, "1");
    d.s.wait_until(&p, "the person to be there", || d.on_screen() == p);
    d.wait_segment(&p, "");
    d.person.keys(&["C-z"]);
    d.s.wait_until(&p, "the job to stop", || {
        d.s.capture(&p).contains("Stopped")
    });
    d.person.keys(&["-l", "fg"]);
    d.person.keys(&["Enter"]);
    d.s.wait_for_command(&p, "python3");
    d.idle("Ctrl-Z and fg under the person's eyes");
    d.person.prefixed(&d.s, "0");
    d.wait_segment(&p, "⚑1 main:1 asking");
    assert_eq!(
        d.notifications().len(),
        told,
        "told again: {:?}",
        d.notifications()
    );
    d.idle("leaving a resumed question unanswered");

    // Answered from elsewhere: the shell is back at its prompt.
    d.s.type_line(&p, "y");
    d.wait_segment(&p, "⚑1 main:1 prompt");
    // exec: the shell replaced by a program that asks; answered, the
    // program's end is the pane's.
    let n = d.any.count();
    d.s.type_line(&p, "exec python3 -c \"input('Exec? [y/N] ')\"");
    let said = d.any.wait(n, &p, "asking");
    assert_eq!(said["question"], "Exec? [y/N]", "{said}");
    d.idle("exec of a program that asks");
    let n = d.any.count();
    d.s.type_line(&p, "y");
    let said = d.any.wait(n, &p, "exited");
    assert_eq!(said["exit_status"], 0, "{said}");
    d.wait_segment(&p, "⚑1 main:1 exited");
    d.idle("the exec'd program's exit");
}
