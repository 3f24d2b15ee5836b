//! Typing that is not shown: secrets read from the terminal.
//!
//! A bot token or a provider key typed at a prompt must not stay on the
//! screen (or in a screen recording, or in the scrollback of a shared
//! terminal). [`HiddenTyping`] turns the terminal's echo off while a line is
//! read and turns it back on when dropped — also when the reader presses
//! Ctrl-C, which would otherwise leave the shell without echo.

#[cfg(unix)]
mod unix {
    use std::sync::Mutex;

    /// The settings to put back, for the Ctrl-C handler.
    static SAVED: Mutex<Option<libc::termios>> = Mutex::new(None);

    /// Echo of the terminal on standard input, off until dropped.
    pub(crate) struct HiddenTyping {
        saved: Option<libc::termios>,
        previous_handler: libc::sighandler_t,
    }

    impl HiddenTyping {
        /// Turns echo off on standard input, if it is a terminal (the line
        /// typed is still ended by Enter, which is shown as a new line).
        pub(crate) fn start() -> Self {
            // SAFETY: termios is plain data; tcgetattr fills it or fails.
            let mut termios: libc::termios = unsafe { std::mem::zeroed() };
            // SAFETY: fd 0 and a valid pointer.
            if unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut termios) } != 0 {
                return Self {
                    saved: None,
                    previous_handler: libc::SIG_DFL,
                };
            }
            let saved = termios;
            *SAVED.lock().unwrap_or_else(|e| e.into_inner()) = Some(saved);
            // SAFETY: installs a handler that only restores the terminal
            // (tcsetattr is async-signal-safe) and re-raises the signal.
            let previous_handler = unsafe {
                libc::signal(
                    libc::SIGINT,
                    restore_and_die as *const () as libc::sighandler_t,
                )
            };
            termios.c_lflag &= !libc::ECHO;
            termios.c_lflag |= libc::ECHONL;
            // SAFETY: fd 0 and a valid termios.
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &termios) };
            Self {
                saved: Some(saved),
                previous_handler,
            }
        }
    }

    impl Drop for HiddenTyping {
        fn drop(&mut self) {
            if let Some(saved) = &self.saved {
                // SAFETY: fd 0 and the settings read before.
                unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, saved) };
                // SAFETY: puts back the handler that was there.
                unsafe { libc::signal(libc::SIGINT, self.previous_handler) };
                *SAVED.lock().unwrap_or_else(|e| e.into_inner()) = None;
            }
        }
    }

    extern "C" fn restore_and_die(signal: libc::c_int) {
        // try_lock: never block inside a signal handler.
        if let Ok(saved) = SAVED.try_lock()
            && let Some(saved) = saved.as_ref()
        {
            // SAFETY: tcsetattr is async-signal-safe; fd 0, valid settings.
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, saved) };
        }
        // SAFETY: back to the default action, then die of the signal as the
        // shell expects.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
    }
}

#[cfg(unix)]
pub(crate) use unix::HiddenTyping;

/// Where the terminal's echo cannot be switched from here, typing shows.
#[cfg(not(unix))]
pub(crate) struct HiddenTyping;

#[cfg(not(unix))]
impl HiddenTyping {
    pub(crate) fn start() -> Self {
        Self
    }
}
