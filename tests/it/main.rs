//! tmux-wait's integration tests, one binary: every test drives the real
//! `tmux-wait` against a real tmux server of its own (see `common`).

mod common;

mod agent_hooks;
mod agent_settings;
mod agents;
mod attention;
mod attention_all_day;
mod attention_marks;
mod attention_plugin;
mod channel_wait;
mod cli_errors;
mod command_wait;
mod dead_pane;
mod descriptors;
mod exact;
mod faults;
mod hooks;
mod hostile_input;
mod hub;
mod idle_output;
mod idle_prompt;
mod install;
mod interference;
mod lifecycle;
mod mcp;
mod messages;
mod native_client;
mod peer_defects;
mod plugin;
mod prompt_output;
mod readme_examples;
mod real_programs;
mod remote;
mod shell_init;
mod survive;
mod text_wait;
