import Foundation
import Logging
import TableModel

/// A swift-log handler that writes one JSON object per line to stderr, for log collectors:
/// `{"time":"2026-11-23T09:30:00.123Z","level":"info","message":"…","label":"tablecast",<metadata>…}`.
///
/// Metadata becomes top-level fields (`table`, `client`, `connection`, `code`, …). The server never puts a token
/// in a message or a field (the black-box test of this format checks it).
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    /// One line per write, whole, whichever thread logs.
    private static let lock = NSLock()

    init(label: String, level: Logger.Level) {
        self.label = label
        logLevel = level
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let fields = metadata.merging(event.metadata ?? [:]) { $1 }
        let text = Self.line(
            time: Date(), level: event.level, message: "\(event.message)", label: label, fields: fields)
        Self.lock.withLock { FileHandle.standardError.write(Data(text.utf8)) }
    }

    /// The record as one line of JSON: time, level and message first, then label and the fields by name.
    static func line(time: Date, level: Logger.Level, message: String, label: String, fields: Logger.Metadata) -> String
    {
        var members = [
            (
                "time",
                JSONValue.string(
                    time.formatted(
                        .iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(
                            separator: .omitted)))
            ),
            ("level", .string(level.rawValue)), ("message", .string(message)), ("label", .string(label)),
        ]
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            members.append((key, json(value)))
        }
        return "{" + members.map { "\(JSONValue.string($0.0).jsonText):\($0.1.jsonText)" }.joined(separator: ",")
            + "}\n"
    }

    private static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let text): .string(text)
        // Counts and ids logged as numbers stay numbers, so collectors can compare them.
        case .stringConvertible(let value as any BinaryInteger): .number(Double(value))
        case .stringConvertible(let value as Double): .number(value)
        case .stringConvertible(let value): .string(value.description)
        case .array(let values): .array(values.map(json))
        case .dictionary(let values): .object(values.mapValues(json))
        }
    }
}
