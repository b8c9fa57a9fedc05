//! A pane's bytes and who is at its terminal: the terminal parse that
//! follows the line under the cursor (`vt`), what of a stream a reader may
//! skip (`skip`), the looks at the kernel that tell who wrote and who
//! reads (`probe`, `shell`), a chunk taken in with them (`intake`), and
//! the rhythm the hub passes floods on
//! (`rhythm`). Below the hub, which parses a redrawn screen once for all
//! its waits with `vt`, and below every wait, which judges its lines with
//! it.

pub mod intake;
pub mod probe;
pub mod rhythm;
pub mod shell;
pub mod skip;
pub mod vt;
