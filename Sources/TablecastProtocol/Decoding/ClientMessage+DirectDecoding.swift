import TableModel

// The row intents (`edit`, `insert`, `delete`, `move`, `patch` and a `batch` of row lists) are most of what clients
// send, so they are read straight from the bytes: one pass over the members with a switch on the key's bytes, no
// dictionary for the message or its entries, no key strings, no field paths. Only row values (`value`, `patch`)
// become trees. Anything this reader does not take for certain (another message type, an escaped or unknown key, a
// duplicate, a value of the wrong kind, a syntax error, a limit) makes it give up, and the general decoder reads
// the message again: so it accepts a subset of what that decoder accepts, decodes it to the same message, and every
// error and path still comes from the general decoder.

extension ClientMessage {
    /// The message when it is a row intent this reader takes; nil when the general decoder must read it.
    package static func decodeRowIntent(_ bytes: [UInt8], limits: ProtocolLimits) -> ClientMessage? {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = RowIntentReader(parser: JSONParser(bytes: buffer, maxDepth: JSONValue.defaultMaxDepth))
            return try? reader.message(limits: limits)
        }
    }
}

/// The members the reader knows, as bits of a set.
private struct Keys: OptionSet {
    let rawValue: UInt32

    static let type = Keys(rawValue: 1 << 0)
    static let table = Keys(rawValue: 1 << 1)
    static let base = Keys(rawValue: 1 << 2)
    static let ref = Keys(rawValue: 1 << 3)
    static let at = Keys(rawValue: 1 << 4)
    static let from = Keys(rawValue: 1 << 5)
    static let to = Keys(rawValue: 1 << 6)
    static let row = Keys(rawValue: 1 << 7)
    static let value = Keys(rawValue: 1 << 8)
    static let patch = Keys(rawValue: 1 << 9)
    static let editable = Keys(rawValue: 1 << 10)
    static let movable = Keys(rawValue: 1 << 11)
    static let editingStyle = Keys(rawValue: 1 << 12)
    static let deleteRows = Keys(rawValue: 1 << 13)
    static let insertRows = Keys(rawValue: 1 << 14)
    static let reloadRows = Keys(rawValue: 1 << 15)
    static let moveRows = Keys(rawValue: 1 << 16)
    static let patchRows = Keys(rawValue: 1 << 17)

    static let message: Keys = [.type, .table, .base, .ref]
    static let flags: Keys = [.editable, .movable, .editingStyle]
    // The members of each entry, as `ClientMessage.entryKeys` has them.
    static let deleteEntry: Keys = [.at, .row]
    static let insertEntry: Keys = Keys([.at, .value]).union(flags)
    static let reloadEntry: Keys = Keys([.at, .row, .value]).union(flags)
    static let moveEntry: Keys = [.from, .to, .row]
    static let patchEntry: Keys = [.at, .row, .patch]
    static let lists: Keys = [.deleteRows, .insertRows, .reloadRows, .moveRows, .patchRows]
    static let all = Keys(rawValue: (1 << 18) - 1)
}

/// Thrown to give up; the general decoder then reads the message.
private struct GiveUp: Error {}

/// The members of one object read so far: a message's or a batch entry's.
private struct Fields {
    var seen: Keys = []
    var at = RowPath(section: 0, row: 0)
    var from = RowPath(section: 0, row: 0)
    var to = RowPath(section: 0, row: 0)
    var row: String?
    var value: JSONValue?
    var patch: JSONValue?
    var editable: Bool?
    var movable: Bool?
    var editingStyle: EditingStyle?

    /// The message's own members, unused in entries.
    var type: Intent.Kind?
    var table = ""
    var base: UInt64?
    var ref: String?
}

extension Intent {
    /// The intents the direct reader takes.
    fileprivate enum Kind {
        case edit, insert, delete, move, patch, batch

        /// The members a message of this kind may have.
        var keys: Keys {
            switch self {
            case .edit: Keys.reloadEntry.union(.message)
            case .insert: Keys.insertEntry.union(.message)
            case .delete: Keys.deleteEntry.union(.message)
            case .move: Keys.moveEntry.union(.message)
            case .patch: Keys.patchEntry.union(.message)
            case .batch: Keys.lists.union(.message)
            }
        }
    }
}

private struct RowIntentReader {
    var parser: JSONParser
    var batch = ClientBatch()
    var entries = 0

    init(parser: JSONParser) { self.parser = parser }

    var bytes: UnsafeBufferPointer<UInt8> { parser.bytes }

    /// The byte at the current index, or nil at the end.
    var next: UInt8? { parser.index < bytes.count ? bytes[parser.index] : nil }

    mutating func expect(_ byte: UInt8) throws {
        skipWhitespace()
        guard next == byte else { throw GiveUp() }
        parser.index += 1
    }

    mutating func message(limits: ProtocolLimits) throws -> ClientMessage {
        skipWhitespace()
        var fields = Fields()
        try readObject(into: &fields, allowing: .all)
        skipWhitespace()
        guard parser.index == bytes.count, let kind = fields.type, fields.seen.contains(.table),
            fields.seen.isSubset(of: kind.keys), entries <= limits.maxBatchEntries
        else { throw GiveUp() }
        if let ref = fields.ref, ref.utf8.count > limits.maxRefLength, ref.count > limits.maxRefLength {
            throw GiveUp()
        }
        let intent: Intent
        switch kind {
        case .batch: intent = .batch(batch)
        case .insert:
            guard let value = fields.value, fields.seen.contains(.at) else { throw GiveUp() }
            intent = .insert(at: fields.at, row: content(fields, value: value))
        case .delete:
            guard fields.seen.contains(.at) else { throw GiveUp() }
            intent = .delete(RowRef(fields.at, id: fields.row))
        case .move:
            guard fields.seen.isSuperset(of: [.from, .to]) else { throw GiveUp() }
            intent = .move(from: RowRef(fields.from, id: fields.row), to: fields.to)
        case .edit:
            guard let value = fields.value, fields.seen.contains(.at) else { throw GiveUp() }
            intent = .edit(
                RowRef(fields.at, id: fields.row), value: value, editable: fields.editable, movable: fields.movable,
                editingStyle: fields.editingStyle)
        case .patch:
            guard let patch = fields.patch, fields.seen.contains(.at) else { throw GiveUp() }
            intent = .patch(RowRef(fields.at, id: fields.row), patch: patch)
        }
        return ClientMessage(ref: fields.ref, .intent(table: fields.table, base: fields.base, intent))
    }

    func content(_ fields: Fields, value: JSONValue) -> RowContent {
        RowContent(
            value: value, editable: fields.editable ?? true, movable: fields.movable ?? true,
            editingStyle: fields.editingStyle ?? .delete)
    }

    /// Reads an object starting at `{` into `fields`, refusing members outside `allowed` and repeated ones.
    mutating func readObject(into fields: inout Fields, allowing allowed: Keys) throws {
        try readElements(UInt8(ascii: "{"), UInt8(ascii: "}")) { reader in
            let key = try reader.readKey()
            guard allowed.contains(key), !fields.seen.contains(key) else { throw GiveUp() }
            fields.seen.insert(key)
            try reader.expect(UInt8(ascii: ":"))
            reader.skipWhitespace()
            try reader.readValue(of: key, into: &fields)
        }
    }

    /// Reads a container from its `opening` byte (at the cursor) through its `closing` one, calling `element` with
    /// the cursor at each element's first byte; the elements are separated by commas. Inlined, so that the closure
    /// is too: otherwise the reader of an `edit` runs ~150 instructions more.
    @inline(__always)
    mutating func readElements(_ opening: UInt8, _ closing: UInt8, _ element: (inout Self) throws -> Void) throws {
        guard next == opening else { throw GiveUp() }
        try parser.enter()
        parser.index += 1
        skipWhitespace()
        if next == closing {
            parser.index += 1
            parser.depth -= 1
            return
        }
        while true {
            skipWhitespace()
            try element(&self)
            skipWhitespace()
            if next == UInt8(ascii: ",") {
                parser.index += 1
            } else if next == closing {
                parser.index += 1
                parser.depth -= 1
                return
            } else {
                throw GiveUp()
            }
        }
    }

    /// The bytes of a string at the cursor up to its closing quote, which the cursor moves past; any escape makes
    /// it a word no name matches.
    @inline(__always)
    mutating func readWord() throws -> Slice<UnsafeBufferPointer<UInt8>> {
        guard next == UInt8(ascii: "\"") else { throw GiveUp() }
        let start = parser.index + 1
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "\"") { end += 1 }
        guard end < bytes.count else { throw GiveUp() }
        parser.index = end + 1
        return bytes[start..<end]
    }

    /// Whether `word` is `name`, whose length the caller already matched.
    func word(_ word: Slice<UnsafeBufferPointer<UInt8>>, is name: StaticString) -> Bool {
        for index in 0..<word.count where name.utf8Start[index] != word[word.startIndex + index] { return false }
        return true
    }

    /// A key of plain letters that the reader knows.
    mutating func readKey() throws -> Keys {
        let key = try readWord()
        let start = key.startIndex
        // By length, then by the bytes that tell the names of that length apart; the whole name is compared last.
        let candidate: (StaticString, Keys)
        switch (key.count, key.first ?? 0) {
        case (2, UInt8(ascii: "a")): candidate = ("at", .at)
        case (2, UInt8(ascii: "t")): candidate = ("to", .to)
        case (3, _): candidate = key[start + 2] == UInt8(ascii: "f") ? ("ref", .ref) : ("row", .row)
        case (4, UInt8(ascii: "t")): candidate = ("type", .type)
        case (4, UInt8(ascii: "b")): candidate = ("base", .base)
        case (4, UInt8(ascii: "f")): candidate = ("from", .from)
        case (5, UInt8(ascii: "t")): candidate = ("table", .table)
        case (5, UInt8(ascii: "v")): candidate = ("value", .value)
        case (5, UInt8(ascii: "p")): candidate = ("patch", .patch)
        case (7, _): candidate = ("movable", .movable)
        case (8, UInt8(ascii: "e")): candidate = ("editable", .editable)
        case (8, UInt8(ascii: "m")): candidate = ("moveRows", .moveRows)
        case (9, _): candidate = ("patchRows", .patchRows)
        case (10, UInt8(ascii: "d")): candidate = ("deleteRows", .deleteRows)
        case (10, UInt8(ascii: "i")): candidate = ("insertRows", .insertRows)
        case (10, UInt8(ascii: "r")): candidate = ("reloadRows", .reloadRows)
        case (12, _): candidate = ("editingStyle", .editingStyle)
        default: throw GiveUp()
        }
        guard word(key, is: candidate.0) else { throw GiveUp() }
        return candidate.1
    }

    mutating func skipWhitespace() {
        while parser.index < bytes.count {
            switch bytes[parser.index] {
            case 0x20, 0x09, 0x0A, 0x0D: parser.index += 1
            default: return
            }
        }
    }

    mutating func readValue(of key: Keys, into fields: inout Fields) throws {
        switch key {
        case .type: fields.type = try readKind()
        case .table: fields.table = try readTableName()
        case .base: fields.base = UInt64(try readCount())
        case .ref: fields.ref = try readString()
        case .at: fields.at = try readRowPath()
        case .from: fields.from = try readRowPath()
        case .to: fields.to = try readRowPath()
        case .row: fields.row = try readString()
        case .value: fields.value = try parser.parseValue()
        case .patch: fields.patch = try parser.parseValue()
        case .editable: fields.editable = try readBool()
        case .movable: fields.movable = try readBool()
        case .editingStyle:
            guard let style = EditingStyle(rawValue: try readString()) else { throw GiveUp() }
            fields.editingStyle = style
        default: try readList(key)
        }
    }

    mutating func readString() throws -> String {
        guard next == UInt8(ascii: "\"") else { throw GiveUp() }
        return try parser.parseString()
    }

    mutating func readBool() throws -> Bool {
        guard case .bool(let value) = try parser.parseValue() else { throw GiveUp() }
        return value
    }

    /// A count: plain digits are read here, other numbers by the parser (with its rules), then checked as
    /// ``JSONDecode/count(_:_:)`` does.
    mutating func readCount() throws -> Int {
        let start = parser.index
        var value = 0
        while parser.index < bytes.count, parser.index - start < 15 {
            let digit = bytes[parser.index] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            value = value * 10 + Int(digit)
            parser.index += 1
        }
        // Plain: some digits, no leading zero, and no fraction, exponent or sixteenth digit after them.
        let plain: Bool
        switch next ?? 0 {
        case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            plain = false
        default: plain = parser.index > start && (bytes[start] != UInt8(ascii: "0") || parser.index - start == 1)
        }
        if plain { return value }
        parser.index = start
        guard let byte = next, byte == UInt8(ascii: "-") || parser.isDigit(byte),
            let count = JSONDecode.exactCount(try parser.parseNumber())
        else { throw GiveUp() }
        return count
    }

    /// `[section, row]`, nothing else.
    mutating func readRowPath() throws -> RowPath {
        guard next == UInt8(ascii: "[") else { throw GiveUp() }
        try parser.enter()
        parser.index += 1
        skipWhitespace()
        let section = try readCount()
        try expect(UInt8(ascii: ","))
        skipWhitespace()
        let row = try readCount()
        try expect(UInt8(ascii: "]"))
        parser.depth -= 1
        return RowPath(section: section, row: row)
    }

    /// The type, when it is one of the row intents.
    mutating func readKind() throws -> Intent.Kind {
        let name = try readWord()
        let candidate: (StaticString, Intent.Kind)
        switch (name.count, name.first ?? 0) {
        case (4, UInt8(ascii: "e")): candidate = ("edit", .edit)
        case (4, UInt8(ascii: "m")): candidate = ("move", .move)
        case (5, UInt8(ascii: "p")): candidate = ("patch", .patch)
        case (5, UInt8(ascii: "b")): candidate = ("batch", .batch)
        case (6, UInt8(ascii: "i")): candidate = ("insert", .insert)
        case (6, UInt8(ascii: "d")): candidate = ("delete", .delete)
        default: throw GiveUp()
        }
        guard word(name, is: candidate.0) else { throw GiveUp() }
        return candidate.1
    }

    /// A valid table name, written without escapes: `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`.
    mutating func readTableName() throws -> String {
        guard next == UInt8(ascii: "\"") else { throw GiveUp() }
        let start = parser.index + 1
        var end = start
        while end < bytes.count, end - start <= 64 {
            let byte = bytes[end]
            let alphanumeric =
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            if alphanumeric || (end > start && (byte == 0x2E || byte == 0x5F || byte == 0x2D)) {
                end += 1
            } else {
                break
            }
        }
        guard end > start, end - start <= 64, end < bytes.count, bytes[end] == UInt8(ascii: "\"") else {
            throw GiveUp()
        }
        parser.index = end + 1
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }

    /// A batch's row list: its entries go straight into ``batch``.
    mutating func readList(_ list: Keys) throws {
        guard next == UInt8(ascii: "[") else { throw GiveUp() }
        // Room for a few entries at once: growing from one through 2, 4 and 8 costs an allocation each time.
        switch list {
        case .deleteRows: batch.deleteRows.reserveCapacity(8)
        case .insertRows: batch.insertRows.reserveCapacity(8)
        case .reloadRows: batch.reloadRows.reserveCapacity(8)
        case .moveRows: batch.moveRows.reserveCapacity(8)
        default: batch.patchRows.reserveCapacity(8)
        }
        try readElements(UInt8(ascii: "["), UInt8(ascii: "]")) { reader in
            try reader.readEntry(of: list)
            reader.entries += 1
        }
    }

    mutating func readEntry(of list: Keys) throws {
        var entry = Fields()
        switch list {
        case .deleteRows:
            try readObject(into: &entry, allowing: Keys.deleteEntry)
            guard entry.seen.contains(.at) else { throw GiveUp() }
            batch.deleteRows.append(RowRef(entry.at, id: entry.row))
        case .insertRows:
            try readObject(into: &entry, allowing: Keys.insertEntry)
            guard let value = entry.value, entry.seen.contains(.at) else { throw GiveUp() }
            batch.insertRows.append(.init(at: entry.at, row: content(entry, value: value)))
        case .reloadRows:
            try readObject(into: &entry, allowing: Keys.reloadEntry)
            guard let value = entry.value, entry.seen.contains(.at) else { throw GiveUp() }
            batch.reloadRows.append(
                .init(
                    row: RowRef(entry.at, id: entry.row), value: value, editable: entry.editable,
                    movable: entry.movable, editingStyle: entry.editingStyle))
        case .moveRows:
            try readObject(into: &entry, allowing: Keys.moveEntry)
            guard entry.seen.isSuperset(of: [.from, .to]) else { throw GiveUp() }
            batch.moveRows.append(.init(from: RowRef(entry.from, id: entry.row), to: entry.to))
        default:
            try readObject(into: &entry, allowing: Keys.patchEntry)
            guard let patch = entry.patch, entry.seen.contains(.at) else { throw GiveUp() }
            batch.patchRows.append(.init(row: RowRef(entry.at, id: entry.row), patch: patch))
        }
    }
}
