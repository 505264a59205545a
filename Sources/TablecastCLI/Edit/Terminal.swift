#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// write(2), named apart from ``Terminal/write(_:)``.
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
        Glibc.write(fd, buffer, count)
    #else
        Darwin.write(fd, buffer, count)
    #endif
}

/// The terminal as the editor uses it: raw mode (termios), the alternate screen, a hidden cursor, no autowrap;
/// everything undone by ``restore()``, on exit and from the crash-signal handlers.
enum Terminal {
    /// The settings before raw mode; written once before any handler can run, read by the handlers.
    nonisolated(unsafe) private static var original = termios()
    nonisolated(unsafe) private static var active: sig_atomic_t = 0

    static var isTerminal: Bool { isatty(0) != 0 && isatty(1) != 0 }

    /// Raw mode, alternate screen, cursor hidden; installs the signal handlers that restore it.
    static func enter() {
        tcgetattr(0, &original)
        var raw = original
        raw.c_iflag &= ~tcflag_t(BRKINT | ICRNL | INPCK | ISTRIP | IXON)
        raw.c_oflag &= ~tcflag_t(OPOST)
        raw.c_cflag |= tcflag_t(CS8)
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | IEXTEN | ISIG)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        tcsetattr(0, TCSAFLUSH, &raw)
        active = 1
        for sig in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGSEGV, SIGABRT, SIGBUS, SIGILL, SIGFPE] {
            signal(sig, crashHandler)
        }
        write("\u{1B}[?1049h\u{1B}[?25l\u{1B}[?7l\u{1B}[2J")
    }

    /// Back to how the terminal was (idempotent, async-signal-safe: tcsetattr and write only).
    static func restore() {
        guard active == 1 else { return }
        active = 0
        tcsetattr(0, TCSAFLUSH, &original)
        // Autowrap back on, cursor shown, alternate screen left: a static string, so nothing is allocated here.
        let leave: StaticString = "\u{1B}[?7h\u{1B}[?25h\u{1B}[?1049l"
        _ = systemWrite(1, leave.utf8Start, leave.utf8CodeUnitCount)
    }

    static func write(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { systemWrite(1, $0.baseAddress! + offset, $0.count - offset) }
            if n <= 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return
            }
            offset += n
        }
    }

    /// Columns and lines (80 × 24 when unknown).
    static func size() -> (width: Int, height: Int) {
        var ws = winsize()
        if ioctl(1, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_col > 0, ws.ws_row > 0 {
            return (Int(ws.ws_col), Int(ws.ws_row))
        }
        return (80, 24)
    }
}

/// Restores the terminal, then lets the signal do what it would have done (terminate, or dump core).
private func crashHandler(_ sig: Int32) {
    Terminal.restore()
    signal(sig, SIG_DFL)
    raise(sig)
}
