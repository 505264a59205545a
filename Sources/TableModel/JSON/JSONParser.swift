/// Why a byte sequence is not acceptable JSON, and where: `offset` is the byte at which parsing failed.
public struct JSONParseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was wrong, e.g. `expected ':' after an object key`.
    public let message: String
    /// Zero-based byte offset into the input where the problem was found.
    public let offset: Int

    /// Creates an error; the parser is the usual source, but layers that reject a parsed document may use it too.
    public init(message: String, offset: Int) {
        self.message = message
        self.offset = offset
    }

    /// The message with its offset, for logs and error replies.
    public var description: String { "invalid JSON at byte \(offset): \(message)" }
}

extension JSONValue {
    /// The nesting depth the parser accepts by default; deep enough for any table value, shallow enough that
    /// hostile input cannot exhaust the stack.
    public static let defaultMaxDepth = 128

    /// Parses one JSON text (RFC 8259) from UTF-8 bytes.
    ///
    /// Strict: exactly one value surrounded only by JSON whitespace, no comments, no trailing commas, no duplicate
    /// object keys, strings must be valid UTF-8 without raw control characters, numbers must be finite doubles.
    public init(parsing bytes: [UInt8], maxDepth: Int = JSONValue.defaultMaxDepth) throws(JSONParseError) {
        self = try bytes.withUnsafeBufferPointer { buffer throws(JSONParseError) in
            var parser = JSONParser(bytes: buffer, maxDepth: maxDepth)
            return try parser.parseDocument()
        }
    }

    /// Parses one JSON text from a string (see ``init(parsing:maxDepth:)-(_,Int)``).
    public init(parsing text: String, maxDepth: Int = JSONValue.defaultMaxDepth) throws(JSONParseError) {
        try self.init(parsing: Array(text.utf8), maxDepth: maxDepth)
    }
}

/// A recursive-descent parser over the bytes of one text; recursion is bounded by `maxDepth`. It reads through a
/// buffer pointer rather than an array, which would check bounds again on every read: each read here already
/// follows its own `index < bytes.count`. The protocol's direct reader of row intents (in this package) drives it
/// for the values it parses.
package struct JSONParser {
    package let bytes: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    package var index = 0
    package var depth = 0

    package init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        if index < bytes.count { throw fail("unexpected \(describe(bytes[index])) after the top-level value") }
        return value
    }

    func fail(_ message: String, at offset: Int? = nil) -> JSONParseError {
        JSONParseError(message: message, offset: offset ?? index)
    }

    func describe(_ byte: UInt8) -> String {
        (0x21..<0x7F).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    package mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw fail("unexpected end of input, expected a value") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        case let byte: throw fail("unexpected \(describe(byte)), expected a value")
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let start = index
        for expected in UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount) {
            guard index < bytes.count, bytes[index] == expected else {
                throw fail("invalid literal, expected '\(literal)'", at: start)
            }
            index += 1
        }
    }

    package mutating func enter() throws(JSONParseError) {
        depth += 1
        if depth > maxDepth { throw fail("nesting deeper than \(maxDepth) levels") }
    }

    mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enter()
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input inside an array") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                depth -= 1
                return .array(elements)
            case let byte: throw fail("unexpected \(describe(byte)), expected ',' or ']' in an array")
            }
        }
    }

    mutating func parseObject() throws(JSONParseError) -> JSONValue {
        // Members are collected first and hashed once into a dictionary of the right size: growing the dictionary
        // member by member rehashed every key at each doubling. The first two (all of most row values) are held in
        // locals rather than in a list, which would cost an allocation.
        var first: JSONMember?
        var second: JSONMember?
        var rest: [JSONMember] = []
        try parseMembers { (member) throws(JSONParseError) in
            if first == nil {
                first = member
            } else if second == nil {
                second = member
            } else {
                rest.append(member)
            }
        }
        guard let first else { return .object([:]) }
        var object = [String: JSONValue](minimumCapacity: 1 + (second == nil ? 0 : 1 + rest.count))
        object[first.key] = first.value
        func insert(_ member: JSONMember) throws(JSONParseError) {
            if object.updateValue(member.value, forKey: member.key) != nil {
                throw fail("duplicate object key \"\(member.key)\"", at: member.offset)
            }
        }
        if let second { try insert(second) }
        for member in rest { try insert(member) }
        return .object(object)
    }

    /// Parses an object starting at its `{` into its members in document order, without checking for duplicate
    /// keys (the caller does, once it has chosen how to hold them).
    mutating func parseMembers() throws(JSONParseError) -> [JSONMember] {
        var members: [JSONMember] = []
        // Most objects have a few members: one allocation instead of growing through 1, 2, 4 and 8.
        members.reserveCapacity(8)
        try parseMembers { (member) throws(JSONParseError) in members.append(member) }
        return members
    }

    /// Parses an object starting at its `{`, passing each member to `body` in document order.
    private mutating func parseMembers(_ body: (JSONMember) throws(JSONParseError) -> Void) throws(JSONParseError) {
        try enter()
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return
        }
        while true {
            skipWhitespace()
            let keyStart = index
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw fail(
                    index < bytes.count
                        ? "expected a string key in an object" : "unexpected end of input inside an object")
            }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw fail("expected ':' after an object key")
            }
            index += 1
            skipWhitespace()
            try body(JSONMember(key: key, value: try parseValue(), offset: keyStart))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input inside an object") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                depth -= 1
                return
            case let byte: throw fail("unexpected \(describe(byte)), expected ',' or '}' in an object")
            }
        }
    }

    /// Parses a string starting at its opening quote. Strings without escapes (the common case) are validated and
    /// converted straight from the input slice; escapes are decoded into a scratch buffer first.
    package mutating func parseString() throws(JSONParseError) -> String {
        let start = index
        index += 1
        var scratch: [UInt8]? = nil
        var runStart = index
        var ascii = true
        while true {
            guard index < bytes.count else { throw fail("unterminated string", at: start) }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text: String?
                if var decoded = scratch {
                    decoded.append(contentsOf: bytes[runStart..<index])
                    text = String(validating: decoded, as: UTF8.self)
                } else if ascii {
                    // ASCII needs no validation.
                    text = String(decoding: UnsafeBufferPointer(rebasing: bytes[runStart..<index]), as: UTF8.self)
                } else {
                    text = String(validating: UnsafeBufferPointer(rebasing: bytes[runStart..<index]), as: UTF8.self)
                }
                guard let text else { throw fail("string is not valid UTF-8", at: start) }
                index += 1
                return text
            } else if byte == UInt8(ascii: "\\") {
                if scratch == nil { scratch = [] }
                scratch!.append(contentsOf: bytes[runStart..<index])
                try parseEscape(into: &scratch!)
                runStart = index
            } else if byte < 0x20 {
                throw fail("raw control character 0x\(String(byte, radix: 16)) in a string")
            } else {
                if byte >= 0x80 { ascii = false }
                index += 1
            }
        }
    }

    mutating func parseEscape(into output: inout [UInt8]) throws(JSONParseError) {
        let escapeStart = index
        index += 1
        guard index < bytes.count else { throw fail("unterminated escape sequence", at: escapeStart) }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(byte)
        case UInt8(ascii: "b"): output.append(0x08)
        case UInt8(ascii: "f"): output.append(0x0C)
        case UInt8(ascii: "n"): output.append(0x0A)
        case UInt8(ascii: "r"): output.append(0x0D)
        case UInt8(ascii: "t"): output.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if (0xD800..<0xDC00).contains(scalar) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                else { throw fail("high surrogate without a following low surrogate", at: escapeStart) }
                index += 2
                let low = try parseHex4()
                guard (0xDC00..<0xE000).contains(low) else {
                    throw fail("high surrogate without a following low surrogate", at: escapeStart)
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00..<0xE000).contains(scalar) {
                throw fail("lone low surrogate", at: escapeStart)
            }
            output.append(contentsOf: UTF8.encode(Unicode.Scalar(scalar).unsafelyUnwrapped).unsafelyUnwrapped)
        default: throw fail("invalid escape sequence '\\\(Character(Unicode.Scalar(byte)))'", at: escapeStart)
        }
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard index < bytes.count else { throw fail("unterminated \\u escape") }
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw fail("invalid hex digit \(describe(byte)) in a \\u escape")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    /// Validates the RFC 8259 number grammar, then converts: short integers exactly and quickly, everything else
    /// through the standard library's correctly rounded decimal conversion.
    package mutating func parseNumber() throws(JSONParseError) -> Double {
        let start = index
        var negative = false
        if bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        guard index < bytes.count, isDigit(bytes[index]) else { throw fail("expected a digit in a number") }
        var integer: Int64 = 0
        var digits = 0
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            digits = 1
            if index < bytes.count, isDigit(bytes[index]) { throw fail("leading zero in a number", at: start) }
        } else {
            while index < bytes.count, isDigit(bytes[index]) {
                if digits < 18 { integer = integer * 10 + Int64(bytes[index] - UInt8(ascii: "0")) }
                digits += 1
                index += 1
            }
        }
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else {
                throw fail("expected a digit after '.' in a number")
            }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else {
                throw fail("expected a digit in a number's exponent")
            }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if isInteger, digits <= 15 { return negative ? -Double(integer) : Double(integer) }
        guard let value = Double(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)),
            value.isFinite
        else {
            throw fail("number is out of the range of a double", at: start)
        }
        return value
    }

    package func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
}

/// One member of an object as parsed: its key, value, and the offset of its key for errors.
struct JSONMember {
    let key: String
    let value: JSONValue
    let offset: Int
}
