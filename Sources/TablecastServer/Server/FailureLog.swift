import Logging
import Synchronization

/// Logs a failure that repeats (the store down while clients retry every 0.2 s) once per cause per interval with
/// a count, instead of once per request: the first occurrence at once, then, at the end of each interval in which
/// it happened again, one line "… (repeated N times in 10 s)". A cause quiet for a whole interval starts over.
final class FailureLog: Sendable {
    private struct Cause {
        /// Occurrences since the last line.
        var count = 0
        var level: Logger.Level
        var metadata: Logger.Metadata
    }

    private let logger: Logger
    private let interval: Duration
    /// Causes logged within the current interval, by message and cause.
    private let open = Mutex<[String: Cause]>([:])

    init(logger: Logger, interval: Duration = .seconds(10)) {
        self.logger = logger
        self.interval = interval
    }

    /// Logs `message` unless it was logged for the same `cause` (e.g. the kind of error) within the interval; then
    /// counts it, for the line at the interval's end, which carries the latest `metadata`.
    func log(_ level: Logger.Level, _ message: String, cause: String, metadata: Logger.Metadata) {
        let key = message + "\u{0}" + cause
        let first = open.withLock { open -> Bool in
            if open[key] != nil {
                open[key]!.count += 1
                open[key]!.metadata = metadata
                return false
            }
            open[key] = Cause(level: level, metadata: metadata)
            return true
        }
        guard first else { return }
        logger.log(level: level, "\(message)", metadata: metadata)
        Task { await summarize(key, message: message) }
    }

    /// At the end of each interval: one line with the count if the cause repeated, and another interval; otherwise
    /// the cause is closed.
    private func summarize(_ key: String, message: String) async {
        while true {
            try? await Task.sleep(for: interval)
            let cause = open.withLock { open -> Cause? in
                guard let cause = open[key], cause.count > 0 else {
                    open[key] = nil
                    return nil
                }
                open[key]!.count = 0
                return cause
            }
            guard let cause else { return }
            logger.log(
                level: cause.level, "\(message) (repeated \(cause.count) times in \(interval.components.seconds) s)",
                metadata: cause.metadata)
        }
    }
}
