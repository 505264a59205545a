/// Why a JSON value does not have the shape of a model type: `path` says where (e.g. `sections[2].rows[0].id`,
/// empty for the value itself) and `message` what was wrong.
public struct JSONDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Where in the value the problem is.
    public let path: String
    /// What was wrong, e.g. `expected a string, got a number`.
    public let message: String

    /// Creates an error.
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    /// `path: message`, or just the message for the value itself.
    public var description: String { path.isEmpty ? message : "\(path): \(message)" }
}

extension JSONValue {
    /// What kind of value this is, for messages.
    var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// Reads the members of a JSON object, naming the full path in errors and refusing members it was not asked about
/// (so that a misspelt key is an error, not silently ignored).
struct ObjectReader {
    let members: [String: JSONValue]
    let path: String

    init(_ value: JSONValue, path: String, allowing keys: Set<String>) throws(JSONDecodingError) {
        guard case .object(let members) = value else {
            throw JSONDecodingError(path: path, message: "expected an object, got \(value.kindName)")
        }
        self.members = members
        self.path = path
        if let unknown = members.keys.filter({ !keys.contains($0) }).sorted().first {
            throw JSONDecodingError(path: self.path(unknown), message: "unknown member")
        }
    }

    func path(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The member `key`, which must be present.
    func required<T>(_ key: String, _ decode: (JSONValue, String) throws(JSONDecodingError) -> T) throws(JSONDecodingError) -> T {
        guard let value = members[key] else { throw JSONDecodingError(path: path(key), message: "missing") }
        return try decode(value, path(key))
    }

    /// The member `key`, or `nil` when it is absent.
    func optional<T>(_ key: String, _ decode: (JSONValue, String) throws(JSONDecodingError) -> T) throws(JSONDecodingError) -> T? {
        guard let value = members[key] else { return nil }
        return try decode(value, path(key))
    }
}

/// Decoders for the primitive shapes the model uses; each takes the value and its path for messages.
enum Decode {
    static func string(_ value: JSONValue, _ path: String) throws(JSONDecodingError) -> String {
        guard case .string(let string) = value else { throw mismatch("a string", value, path) }
        return string
    }

    /// A string, or `nil` for JSON null.
    static func nullableString(_ value: JSONValue, _ path: String) throws(JSONDecodingError) -> String? {
        if case .null = value { return nil }
        guard case .string(let string) = value else { throw mismatch("a string or null", value, path) }
        return string
    }

    static func bool(_ value: JSONValue, _ path: String) throws(JSONDecodingError) -> Bool {
        guard case .bool(let bool) = value else { throw mismatch("a boolean", value, path) }
        return bool
    }

    /// A row's editing style: `"delete"`, `"insert"` or `"none"`.
    static func editingStyle(_ value: JSONValue, _ path: String) throws(JSONDecodingError) -> EditingStyle {
        guard case .string(let name) = value, let style = EditingStyle(rawValue: name) else {
            throw mismatch("one of \"delete\", \"insert\", \"none\"", value, path)
        }
        return style
    }

    /// A non-negative integer that a double represents exactly (below 2^53).
    static func count(_ value: JSONValue, _ path: String) throws(JSONDecodingError) -> Int {
        guard case .number(let number) = value, number >= 0, number < 9_007_199_254_740_992, number.rounded(.towardZero) == number
        else { throw mismatch("a non-negative integer", value, path) }
        return Int(number)
    }

    static func version(_ value: JSONValue, _ path: String) throws(JSONDecodingError) -> UInt64 {
        UInt64(try count(value, path))
    }

    /// An index path, `[section, row]`.
    static func rowPath(_ value: JSONValue, _ path: String) throws(JSONDecodingError) -> RowPath {
        guard case .array(let elements) = value, elements.count == 2 else {
            throw mismatch("an index path [section, row]", value, path)
        }
        return RowPath(section: try count(elements[0], "\(path)[0]"), row: try count(elements[1], "\(path)[1]"))
    }

    static func array<T>(
        _ element: @escaping (JSONValue, String) throws(JSONDecodingError) -> T
    ) -> (JSONValue, String) throws(JSONDecodingError) -> [T] {
        { (value: JSONValue, path: String) throws(JSONDecodingError) -> [T] in
            guard case .array(let elements) = value else { throw mismatch("an array", value, path) }
            var result: [T] = []
            result.reserveCapacity(elements.count)
            for (index, item) in elements.enumerated() { result.append(try element(item, "\(path)[\(index)]")) }
            return result
        }
    }

    static func any(_ value: JSONValue, _ path: String) -> JSONValue { value }

    static func mismatch(_ expected: String, _ value: JSONValue, _ path: String) -> JSONDecodingError {
        JSONDecodingError(path: path, message: "expected \(expected), got \(value.kindName)")
    }
}

extension RowPath {
    /// The wire form, `[section, row]`.
    public var json: JSONValue { .array([.number(Double(section)), .number(Double(row))]) }
}

extension Optional where Wrapped == String {
    /// A string, or JSON null.
    var json: JSONValue { map(JSONValue.string) ?? .null }
}
