import Logging
import Synchronization

/// Keeps every message logged through it.
final class LogRecorder: LogHandler, @unchecked Sendable {
    private let recorded = Mutex<[String]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    var messages: [String] { recorded.withLock { $0 } }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        recorded.withLock { $0.append("\(event.message)") }
    }
}
