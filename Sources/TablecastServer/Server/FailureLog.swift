import Logging
import Synchronization

/// Logs a failure that repeats (the store down while clients retry every 0.2 s) once per cause per interval with
/// a count, instead of once per request: the first occurrence at once, then, at the end of each interval in which
/// it happened again, one line "… (repeated N times in 10 s)". A cause quiet for a whole interval starts over.
///
/// Each open cause is an incident with an id, logged as `incident` on its lines and returned to the caller, so that
/// the error a client is shown can name the lines that tell the whole story.
final class FailureLog: Sendable {
    private struct Cause {
        /// Occurrences since the last line.
        var count = 0
        var level: Logger.Level
        var metadata: Logger.Metadata
        let incident: String
    }

    private let logger: Logger
    private let interval: Duration
    /// Where the summaries' tasks run (the server's, so that shutdown waits for their last lines).
    let tasks: ServerTasks
    /// Causes logged within the current interval, by message and cause.
    private let open = Mutex<[String: Cause]>([:])

    init(logger: Logger, interval: Duration = .seconds(10), tasks: ServerTasks) {
        self.logger = logger
        self.interval = interval
        self.tasks = tasks
    }

    /// Logs `message` unless it was logged for the same `cause` (e.g. the kind of error) within the interval; then
    /// counts it, for the line at the interval's end, which carries the latest `metadata`.
    /// Returns the incident's id, the same for every occurrence within its intervals.
    @discardableResult
    func log(_ level: Logger.Level, _ message: String, cause: String, metadata: Logger.Metadata) -> String {
        let key = message + "\u{0}" + cause
        let (first, incident) = open.withLock { open -> (Bool, String) in
            if let cause = open[key] {
                open[key]!.count += 1
                open[key]!.metadata = metadata
                return (false, cause.incident)
            }
            let incident = Self.newIncident()
            open[key] = Cause(level: level, metadata: metadata, incident: incident)
            return (true, incident)
        }
        guard first else { return incident }
        logger.log(level: level, "\(message)", metadata: metadata.merging(["incident": "\(incident)"]) { $1 })
        tasks.spawn { await self.summarize(key, message: message) }
        return incident
    }

    /// Eight hexadecimal digits: enough to find the lines in a day's log, nothing a client could learn from.
    private static func newIncident() -> String {
        let digits = String(UInt32.random(in: .min ... .max), radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
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
                metadata: cause.metadata.merging(["incident": "\(cause.incident)"]) { $1 })
        }
    }
}
