import Foundation

/// The write end of the self-pipe; set once before the handlers are installed, read by the handler.
nonisolated(unsafe) private var signalPipeWriteEnd: Int32 = -1

/// The signal handler: only `write` is async-signal-safe, so it hands the signal number to the waiting thread.
private func forwardSignal(_ signal: Int32) {
    var byte = UInt8(truncatingIfNeeded: signal)
    _ = write(signalPipeWriteEnd, &byte, 1)
}

/// Receives signals with the self-pipe trick: a C handler writes the signal number into a pipe and a dedicated
/// thread reads it. This works whichever thread the kernel delivers the signal to, which libdispatch's signal
/// sources on Linux did not reliably do (a SIGTERM could be consumed without waking them).
enum ShutdownSignal {
    /// Installs handlers for `signals` (once per process) and yields each one received, in order.
    static func stream(of signals: [Int32]) -> AsyncStream<Int32> {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { fatalError("cannot create the signal pipe: errno \(errno)") }
        signalPipeWriteEnd = ends[1]
        for signal in signals { _ = Foundation.signal(signal, forwardSignal) }
        let readEnd = ends[0]
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        let thread = Thread {
            var byte: UInt8 = 0
            while true {
                let count = read(readEnd, &byte, 1)
                if count == 1 {
                    continuation.yield(Int32(byte))
                } else if count < 0 && errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            continuation.finish()
        }
        thread.name = "tablecast-signals"
        thread.start()
        return stream
    }
}
