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

/// Reads the members of one JSON object, naming the full path in errors and refusing members it was not asked about
/// (so that a misspelt key is an error, never silently ignored). The one reader of JSON objects: the model's
/// stored and wire shapes and the protocol's messages all decode through it.
public struct JSONObjectReader {
    /// The members as parsed: a message's (a few, looked up by name a few times each) are found faster by scanning
    /// a list than by hashing every key into a dictionary and hashing again for each lookup.
    private enum Storage {
        case dictionary([String: JSONValue])
        case list([JSONMember])
    }

    private let storage: Storage
    /// Where the object is, for messages: `sections[2]`, `insert`, `deleteRows[0]`; empty for the value itself.
    public let path: String

    /// The object's members.
    public var members: [String: JSONValue] {
        switch storage {
        case .dictionary(let members): members
        case .list(let list): Dictionary(uniqueKeysWithValues: list.lazy.map { ($0.key, $0.value) })
        }
    }

    /// Reads `value`, which must be an object with no members outside `keys`; with `keys` nil, other members are
    /// ignored (for messages from a newer peer, which may add fields).
    public init(_ value: JSONValue, path: String, allowing keys: Set<String>?) throws(JSONDecodingError) {
        guard case .object(let members) = value else {
            throw JSONDecodingError(path: path, message: "expected an object, got \(value.kindName)")
        }
        storage = .dictionary(members)
        self.path = path
        if let keys { try check(allowing: keys) }
    }

    private init(storage: Storage, path: String) {
        self.storage = storage
        self.path = path
    }

    /// Parses `bytes` as one JSON text (as ``JSONValue/init(parsing:maxDepth:)-(_,Int)`` does, with the same
    /// errors) and reads it at the empty path with any members; nil when the text is valid but not an object.
    package init?(parsing bytes: [UInt8], maxDepth: Int = JSONValue.defaultMaxDepth) throws(JSONParseError) {
        let list = try bytes.withUnsafeBufferPointer { buffer throws(JSONParseError) -> [JSONMember]? in
            var parser = JSONParser(bytes: buffer, maxDepth: maxDepth)
            parser.skipWhitespace()
            guard parser.index < buffer.count, buffer[parser.index] == UInt8(ascii: "{") else {
                _ = try parser.parseDocument()
                return nil
            }
            let members = try parser.parseMembers()
            try Self.checkUnique(members, parser)
            parser.skipWhitespace()
            if parser.index < buffer.count {
                throw parser.fail("unexpected \(parser.describe(buffer[parser.index])) after the top-level value")
            }
            return members
        }
        guard let list else { return nil }
        self.init(storage: .list(list), path: "")
    }

    /// Throws the parser's error for the first member whose key an earlier one has, as building a dictionary would.
    private static func checkUnique(_ members: [JSONMember], _ parser: JSONParser) throws(JSONParseError) {
        // Comparing each pair costs less than hashing for a message's few members, but not for many.
        if members.count <= 16 {
            for (index, member) in members.enumerated()
            where members[..<index].contains(where: { $0.key == member.key }) {
                throw parser.fail("duplicate object key \"\(member.key)\"", at: member.offset)
            }
        } else {
            var seen = Set<String>(minimumCapacity: members.count)
            for member in members where !seen.insert(member.key).inserted {
                throw parser.fail("duplicate object key \"\(member.key)\"", at: member.offset)
            }
        }
    }

    /// The same members read at `path`, which must have no members outside `keys`.
    package func reading(at path: String, allowing keys: Set<String>) throws(JSONDecodingError) -> JSONObjectReader {
        let reader = JSONObjectReader(storage: storage, path: path)
        try reader.check(allowing: keys)
        return reader
    }

    /// Throws for the first member outside `keys`, in sorted order.
    private func check(allowing keys: Set<String>) throws(JSONDecodingError) {
        var unknown: String?
        switch storage {
        case .dictionary(let members):
            for key in members.keys where !keys.contains(key) && unknown.map({ key < $0 }) ?? true { unknown = key }
        case .list(let list):
            for member in list where !keys.contains(member.key) && unknown.map({ member.key < $0 }) ?? true {
                unknown = member.key
            }
        }
        if let unknown { throw JSONDecodingError(path: path(unknown), message: "unknown field") }
    }

    /// The member `key`, or nil when it is absent.
    public subscript(key: String) -> JSONValue? {
        switch storage {
        case .dictionary(let members): return members[key]
        case .list(let list):
            for member in list where member.key == key { return member.value }
            return nil
        }
    }

    /// The path of member `key`.
    public func path(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// Whether member `key` is present (null included).
    public func contains(_ key: String) -> Bool { self[key] != nil }

    /// The member `key`, which must be present.
    public func required<T>(_ key: String, _ decode: (JSONValue, String) throws(JSONDecodingError) -> T)
        throws(JSONDecodingError) -> T
    {
        guard let value = self[key] else { throw JSONDecodingError(path: path(key), message: "missing") }
        return try decode(value, path(key))
    }

    /// The member `key`, or `nil` when it is absent.
    public func optional<T>(_ key: String, _ decode: (JSONValue, String) throws(JSONDecodingError) -> T)
        throws(JSONDecodingError) -> T?
    {
        guard let value = self[key] else { return nil }
        return try decode(value, path(key))
    }

    /// An error for member `key`, whose value is of the right type but not acceptable: `expected <expectation>`.
    public func failure(_ key: String, expected expectation: String) -> JSONDecodingError {
        JSONDecodingError(path: path(key), message: "expected \(expectation)")
    }
}

/// Decoders for the primitive shapes, for ``JSONObjectReader``; each takes the value and its path for messages.
public enum JSONDecode {
    /// A string.
    public static func string(_ value: JSONValue, _ path: String) throws(JSONDecodingError) -> String {
        guard case .string(let string) = value else { throw mismatch("a string", value, path) }
        return string
    }

    /// A string, or `nil` for JSON null.
    public static func nullableString(_ value: JSONValue, _ path: String) throws(JSONDecodingError) -> String? {
        if case .null = value { return nil }
        guard case .string(let string) = value else { throw mismatch("a string or null", value, path) }
        return string
    }

    /// A boolean.
    public static func bool(_ value: JSONValue, _ path: String) throws(JSONDecodingError) -> Bool {
        guard case .bool(let bool) = value else { throw mismatch("a boolean", value, path) }
        return bool
    }

    /// A row's editing style: `"delete"`, `"insert"` or `"none"`.
    public static func editingStyle(_ value: JSONValue, _ path: String) throws(JSONDecodingError) -> EditingStyle {
        guard case .string(let name) = value, let style = EditingStyle(rawValue: name) else {
            throw mismatch("one of \"delete\", \"insert\", \"none\"", value, path)
        }
        return style
    }

    /// A non-negative integer that a double represents exactly (below 2^53).
    public static func count(_ value: JSONValue, _ path: String) throws(JSONDecodingError) -> Int {
        guard let count = exactCount(value) else { throw mismatch("a non-negative integer", value, path) }
        return count
    }

    private static func exactCount(_ value: JSONValue) -> Int? {
        guard case .number(let number) = value else { return nil }
        return exactCount(number)
    }

    /// `number` as a count when a double represents it exactly as a non-negative integer (below 2^53).
    package static func exactCount(_ number: Double) -> Int? {
        guard number >= 0, number < 9_007_199_254_740_992, number.rounded(.towardZero) == number else { return nil }
        return Int(number)
    }

    /// A version: a non-negative integer.
    public static func version(_ value: JSONValue, _ path: String) throws(JSONDecodingError) -> UInt64 {
        UInt64(try count(value, path))
    }

    /// An index path, `[section, row]`.
    public static func rowPath(_ value: JSONValue, _ path: String) throws(JSONDecodingError) -> RowPath {
        guard case .array(let elements) = value, elements.count == 2 else {
            throw mismatch("an index path [section, row]", value, path)
        }
        // The elements' paths are built only for an error: most index paths are valid.
        guard let section = exactCount(elements[0]) else {
            throw mismatch("a non-negative integer", elements[0], "\(path)[0]")
        }
        guard let row = exactCount(elements[1]) else {
            throw mismatch("a non-negative integer", elements[1], "\(path)[1]")
        }
        return RowPath(section: section, row: row)
    }

    /// An array whose elements `element` decodes, each with its index in the path.
    public static func array<T>(
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

    /// Any value, as it is.
    public static func any(_ value: JSONValue, _ path: String) -> JSONValue { value }

    /// `expected <expected>, got <the value's kind>`.
    public static func mismatch(_ expected: String, _ value: JSONValue, _ path: String) -> JSONDecodingError {
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
