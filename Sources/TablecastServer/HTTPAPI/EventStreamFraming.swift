import Foundation

/// Where an event stream is in its table: the `id` of each `snapshot` and `update` event, `<epoch>:<version>`, which
/// a reconnecting client sends back as `Last-Event-ID` to get only what it missed (the epoch tells a table dropped
/// and created again under the same name from the one it followed).
struct EventStreamPosition: Hashable, Sendable {
    /// Nil when a client sent a bare version: its missed updates are sent as long as the server has them.
    var epoch: String?
    var version: UInt64

    /// `<epoch>:<version>` or `<version>`; nil for anything else (the client then gets a fresh snapshot).
    init?(lastEventID: String) {
        let text = lastEventID.trimmingCharacters(in: .whitespaces)
        if let colon = text.lastIndex(of: ":") {
            let epoch = text[..<colon]
            guard !epoch.isEmpty, epoch.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }),
                let version = UInt64(text[text.index(after: colon)...])
            else { return nil }
            self.init(epoch: String(epoch), version: version)
        } else {
            guard let version = UInt64(text) else { return nil }
            self.init(epoch: nil, version: version)
        }
    }

    init(epoch: String?, version: UInt64) {
        self.epoch = epoch
        self.version = version
    }

    /// The event id.
    var id: String { epoch.map { "\($0):\(version)" } ?? String(version) }
}

/// Server-sent events as bytes (the HTML standard's `text/event-stream`): one `data` line per event, since the
/// protocol's JSON never holds a raw line break.
enum EventStreamFraming {
    static func event(_ name: String, id: String?, data: [UInt8]) -> [UInt8] {
        var bytes = Array("event: \(name)\n".utf8)
        if let id { bytes += Array("id: \(id)\n".utf8) }
        bytes += Array("data: ".utf8)
        // A line break would end the data line early: JSON text has none outside strings, where it is escaped.
        bytes += data.filter { $0 != 0x0A && $0 != 0x0D }
        bytes += Array("\n\n".utf8)
        return bytes
    }

    /// A comment line: clients ignore it, proxies see traffic.
    static let heartbeat = Array(": heartbeat\n\n".utf8)

    /// The server ends the stream: why, as the close of a WebSocket connection would say (4000 for a reader that
    /// fell behind).
    static func close(code: UInt16, reason: String) -> [UInt8] {
        var escaped = ""
        for character in reason.unicodeScalars {
            switch character {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case _ where character.value < 0x20: escaped += " "
            default: escaped.unicodeScalars.append(character)
            }
        }
        return event("close", id: nil, data: Array(#"{"code":\#(code),"reason":"\#(escaped)"}"#.utf8))
    }
}
