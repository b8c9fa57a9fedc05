//! The plugin's attention (placeholder).
use crate::error::Result;
use crate::tmux::Socket;
pub fn serve(_s: &Socket) -> Result<()> {
    Ok(())
}
pub fn toggle(_s: &Socket, _t: &str, _c: Option<&str>) -> Result<()> {
    Ok(())
}
pub fn sync(_s: &Socket) -> Result<()> {
    Ok(())
}
pub fn visit(_s: &Socket) -> Result<()> {
    Ok(())
}
pub fn next(_s: &Socket, _c: Option<&str>) -> Result<()> {
    Ok(())
}
