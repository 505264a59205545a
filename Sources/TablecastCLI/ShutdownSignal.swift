import Foundation

/// The write end of the self-pipe; set once before the handlers are installed, read by the handler.
nonisolated(unsafe) private var signalPipeWriteEnd: Int32 = -1

/// The signal handler: only `write` is async-signal-safe, so it hands the signal number to the waiting thread.
private func forwardSignal(_ signal: Int32) {
    var byte = UInt8(truncatingIfNeeded: signal)
    _ = write(signalPipeWriteEnd, &byte, 1)
}

/// Waits for a termination signal with the self-pipe trick: a C handler writes the signal number into a pipe
/// and a dedicated thread reads it. This works whichever thread the kernel delivers the signal to, which
/// libdispatch's signal sources on Linux did not reliably do (a SIGTERM could be consumed without waking them).
enum ShutdownSignal {
    /// Installs handlers for `signals` and returns the first one received.
    static func first(of signals: [Int32]) async -> Int32 {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { fatalError("cannot create the signal pipe: errno \(errno)") }
        signalPipeWriteEnd = ends[1]
        for signal in signals { _ = Foundation.signal(signal, forwardSignal) }
        let readEnd = ends[0]
        return await withCheckedContinuation { continuation in
            let thread = Thread {
                var byte: UInt8 = 0
                while read(readEnd, &byte, 1) < 0 && errno == EINTR {}
                continuation.resume(returning: Int32(byte))
            }
            thread.name = "tablecast-signals"
            thread.start()
        }
    }
}
