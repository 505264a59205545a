/// Reads what a counting subscriber needs from an `update` (table, version, origin) by walking the top level of
/// the compact JSON without building any value: no allocation besides the few strings it returns.
struct UpdateScanner {
    struct Summary: Hashable, Sendable {
        var table: String
        var version: UInt64
        var originClient: String?
        var originRef: String?
    }

    /// The summary when `bytes` is an `update`; nil for any other message (or anything it cannot read).
    static func scan(_ bytes: [UInt8]) -> Summary? {
        bytes.withUnsafeBufferPointer { buffer -> Summary? in
            var scanner = Cursor(bytes: buffer)
            return scanner.topLevel()
        }
    }

    private struct Cursor {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count,
                bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09
            {
                index += 1
            }
        }

        /// A string starting at the cursor (its opening quote); decoded only for the simple case (no escapes).
        mutating func string() -> String? {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
            index += 1
            let start = index
            var escaped = false
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                if bytes[index] == UInt8(ascii: "\\") {
                    escaped = true
                    index += 1
                }
                index += 1
            }
            guard index < bytes.count else { return nil }
            defer { index += 1 }
            if escaped { return nil }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        }

        /// Skips one value of any kind.
        mutating func skipValue() -> Bool {
            skipSpace()
            guard index < bytes.count else { return false }
            switch bytes[index] {
            case UInt8(ascii: "\""):
                guard index < bytes.count else { return false }
                index += 1
                while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                    if bytes[index] == UInt8(ascii: "\\") { index += 1 }
                    index += 1
                }
                index += 1
                return index <= bytes.count
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var depth = 0
                while index < bytes.count {
                    switch bytes[index] {
                    case UInt8(ascii: "\""):
                        guard skipValue() else { return false }
                        continue
                    case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"):
                        depth -= 1
                        if depth == 0 {
                            index += 1
                            return true
                        }
                    default: break
                    }
                    index += 1
                }
                return false
            default:
                while index < bytes.count, bytes[index] != UInt8(ascii: ","), bytes[index] != UInt8(ascii: "}"),
                    bytes[index] != UInt8(ascii: "]")
                {
                    index += 1
                }
                return true
            }
        }

        mutating func number() -> UInt64? {
            skipSpace()
            var value: UInt64 = 0
            var digits = 0
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                value = value &* 10 &+ UInt64(bytes[index] - UInt8(ascii: "0"))
                index += 1
                digits += 1
            }
            return digits > 0 && digits < 19 ? value : nil
        }

        /// Walks `{ "key": value, … }`, calling `member` with the cursor on each value; `member` consumes the value
        /// and returns false to stop.
        mutating func object(_ member: (inout Cursor, String) -> Bool) -> Bool {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return false }
            index += 1
            while true {
                skipSpace()
                guard index < bytes.count else { return false }
                if bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return true
                }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard let key = string() else { return false }
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return false }
                index += 1
                skipSpace()
                guard member(&self, key) else { return false }
            }
        }

        mutating func topLevel() -> Summary? {
            var type: String?
            var table: String?
            var version: UInt64?
            var client: String?
            var ref: String?
            var origin = false
            // Tablecast's server writes these four members first, so the batch's lists are never walked.
            var headerRead: Bool { type != nil && table != nil && version != nil && origin }
            let complete = object { cursor, key in
                switch key {
                case "type":
                    type = cursor.string()
                    return type != nil && !headerRead
                case "table":
                    table = cursor.string()
                    return table != nil && !headerRead
                case "version":
                    version = cursor.number()
                    return version != nil && !headerRead
                case "origin":
                    origin = cursor.object { inner, key in
                        switch key {
                        case "client":
                            client = inner.string()
                            return client != nil
                        case "ref":
                            ref = inner.string()
                            return ref != nil
                        default: return inner.skipValue()
                        }
                    }
                    return origin && !headerRead
                default:
                    return cursor.skipValue()
                }
            }
            guard complete || headerRead, type == "update", let table, let version else { return nil }
            return Summary(table: table, version: version, originClient: client, originRef: ref)
        }
    }
}
