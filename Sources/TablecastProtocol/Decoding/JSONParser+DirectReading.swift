import Glibc
import TableModel

// What the direct readers (of row intents and of updates) read straight from the bytes. Each gives up by
// throwing ``GiveUp`` on anything it does not take for certain, and the general decoder then reads the message.

/// Thrown to give up; the general decoder then reads the message.
struct GiveUp: Error {}

/// The members a direct reader has read of the object at hand, by key.
protocol DirectFields {
    associatedtype Keys: OptionSet where Keys.Element == Keys
    var seen: Keys { get set }
}

/// A reader of one kind of message straight from the bytes: what it knows is its keys and how to read each one's
/// value; walking containers and objects is the same for all.
protocol DirectReader {
    associatedtype Fields: DirectFields
    var parser: JSONParser { get set }
    /// A key of plain letters that the reader knows.
    mutating func readKey() throws -> Fields.Keys
    /// Reads the value of member `key` (the cursor at its first byte) into `fields`.
    mutating func readValue(of key: Fields.Keys, into fields: inout Fields) throws
}

extension DirectReader {
    /// Reads an object starting at `{` into `fields`, refusing members outside `allowed` and repeated ones.
    mutating func readObject(into fields: inout Fields, allowing allowed: Fields.Keys) throws {
        try readElements(UInt8(ascii: "{"), UInt8(ascii: "}")) { reader in
            let key = try reader.readKey()
            guard allowed.contains(key), !fields.seen.contains(key) else { throw GiveUp() }
            fields.seen.insert(key)
            try reader.parser.expect(UInt8(ascii: ":"))
            reader.parser.skipBlanks()
            try reader.readValue(of: key, into: &fields)
        }
    }

    /// Reads a container from its `opening` byte (at the cursor) through its `closing` one, calling `element` with
    /// the cursor at each element's first byte; the elements are separated by commas. Inlined, so that the closure
    /// is too: otherwise the reader of an `edit` runs ~150 instructions more.
    @inline(__always)
    mutating func readElements(_ opening: UInt8, _ closing: UInt8, _ element: (inout Self) throws -> Void) throws {
        guard parser.next == opening else { throw GiveUp() }
        try parser.enter()
        parser.index += 1
        parser.skipBlanks()
        if parser.next == closing {
            parser.index += 1
            parser.depth -= 1
            return
        }
        while true {
            parser.skipBlanks()
            try element(&self)
            parser.skipBlanks()
            if parser.next == UInt8(ascii: ",") {
                parser.index += 1
            } else if parser.next == closing {
                parser.index += 1
                parser.depth -= 1
                return
            } else {
                throw GiveUp()
            }
        }
    }
}

extension JSONParser {
    /// The byte at the current index, or nil at the end.
    var next: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func skipBlanks() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Skips blanks, then `byte`.
    mutating func expect(_ byte: UInt8) throws {
        skipBlanks()
        guard next == byte else { throw GiveUp() }
        index += 1
    }

    /// The bytes of a string at the cursor up to its closing quote, which the cursor moves past; any escape makes
    /// it a word no name matches.
    @inline(__always)
    mutating func readWord() throws -> Slice<UnsafeBufferPointer<UInt8>> {
        guard next == UInt8(ascii: "\"") else { throw GiveUp() }
        let start = index + 1
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "\"") { end += 1 }
        guard end < bytes.count else { throw GiveUp() }
        index = end + 1
        return bytes[start..<end]
    }

    /// Whether `word` is `name`, whose length the caller already matched. One `memcmp`: comparing byte by byte
    /// through the slice cost most of reading a key.
    func word(_ word: Slice<UnsafeBufferPointer<UInt8>>, is name: StaticString) -> Bool {
        guard let base = word.base.baseAddress else { return word.isEmpty }
        return memcmp(base + word.startIndex, name.utf8Start, word.count) == 0
    }

    mutating func readString() throws -> String {
        guard next == UInt8(ascii: "\"") else { throw GiveUp() }
        return try parseString()
    }

    mutating func readBool() throws -> Bool {
        guard case .bool(let value) = try parseValue() else { throw GiveUp() }
        return value
    }

    /// A row's editing style, by its name.
    mutating func readEditingStyle() throws -> EditingStyle {
        guard let style = EditingStyle(rawValue: try readString()) else { throw GiveUp() }
        return style
    }

    /// A count: plain digits are read here, other numbers by the parser (with its rules), then checked as
    /// ``JSONDecode/count(_:_:)`` does.
    mutating func readCount() throws -> Int {
        let start = index
        var value = 0
        while index < bytes.count, index - start < 15 {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            value = value * 10 + Int(digit)
            index += 1
        }
        // Plain: some digits, no leading zero, and no fraction, exponent or sixteenth digit after them.
        let plain: Bool
        switch next ?? 0 {
        case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            plain = false
        default: plain = index > start && (bytes[start] != UInt8(ascii: "0") || index - start == 1)
        }
        if plain { return value }
        index = start
        guard let byte = next, byte == UInt8(ascii: "-") || isDigit(byte),
            let count = JSONDecode.exactCount(try parseNumber())
        else { throw GiveUp() }
        return count
    }

    /// `[section, row]`, nothing else.
    mutating func readRowPath() throws -> RowPath {
        guard next == UInt8(ascii: "[") else { throw GiveUp() }
        try enter()
        index += 1
        skipBlanks()
        let section = try readCount()
        try expect(UInt8(ascii: ","))
        skipBlanks()
        let row = try readCount()
        try expect(UInt8(ascii: "]"))
        depth -= 1
        return RowPath(section: section, row: row)
    }
}
