import TableModel

/// Reads the fields of one JSON object with errors that name the message, the field and what was wrong with it
/// (`insert: field 'at' must be an index path [section, row]`).
struct FieldReader {
    let members: [String: JSONValue]
    /// What the object is, for messages: `insert`, `batch.insertRows[2]`.
    let context: String

    init(_ value: JSONValue, context: String) throws(ProtocolError) {
        guard case .object(let members) = value else {
            throw .badRequest("\(context) must be a JSON object", at: context)
        }
        self.members = members
        self.context = context
    }

    func contains(_ key: String) -> Bool { members[key] != nil }

    func failure(_ key: String, _ expectation: String) -> ProtocolError {
        .badRequest("\(context): field '\(key)' must be \(expectation)", at: context)
    }

    func missing(_ key: String) -> ProtocolError {
        .badRequest("\(context): missing field '\(key)'", at: context)
    }

    /// A required field of any JSON type (null included).
    func value(_ key: String) throws(ProtocolError) -> JSONValue {
        guard let value = members[key] else { throw missing(key) }
        return value
    }

    func string(_ key: String) throws(ProtocolError) -> String {
        guard let value = try optionalString(key) else { throw missing(key) }
        return value
    }

    func optionalString(_ key: String) throws(ProtocolError) -> String? {
        switch members[key] {
        case nil: return nil
        case .string(let value)?: return value
        default: throw failure(key, "a string")
        }
    }

    /// Absent → nil (keep); `null` → `.some(nil)` (clear); a string → `.some(string)`.
    func nullableString(_ key: String) throws(ProtocolError) -> String?? {
        switch members[key] {
        case nil: return nil
        case .null?: return .some(nil)
        case .string(let value)?: return .some(value)
        default: throw failure(key, "a string or null")
        }
    }

    func bool(_ key: String) throws(ProtocolError) -> Bool {
        guard let value = try optionalBool(key) else { throw missing(key) }
        return value
    }

    func optionalBool(_ key: String) throws(ProtocolError) -> Bool? {
        switch members[key] {
        case nil: return nil
        case .bool(let value)?: return value
        default: throw failure(key, "true or false")
        }
    }

    func index(_ key: String) throws(ProtocolError) -> Int {
        guard let value = members[key] else { throw missing(key) }
        guard let index = Self.index(value) else { throw failure(key, "a non-negative integer") }
        return index
    }

    func optionalVersion(_ key: String) throws(ProtocolError) -> UInt64? {
        guard let value = members[key] else { return nil }
        guard let index = Self.index(value) else { throw failure(key, "a non-negative integer") }
        return UInt64(index)
    }

    func rowPath(_ key: String) throws(ProtocolError) -> RowPath {
        guard let value = members[key] else { throw missing(key) }
        guard case .array(let parts) = value, parts.count == 2, let section = Self.index(parts[0]),
            let row = Self.index(parts[1])
        else { throw failure(key, "an index path [section, row] of two non-negative integers") }
        return RowPath(section: section, row: row)
    }

    func optionalArray(_ key: String) throws(ProtocolError) -> [JSONValue]? {
        switch members[key] {
        case nil: return nil
        case .array(let elements)?: return elements
        default: throw failure(key, "an array")
        }
    }

    /// An integer that fits an index: JSON has only doubles, so integral values up to 2^53 are accepted.
    static func index(_ value: JSONValue) -> Int? {
        guard case .number(let number) = value, number >= 0, number <= 9_007_199_254_740_992,
            number.rounded(.towardZero) == number
        else { return nil }
        return Int(number)
    }
}
