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

/// The members of one object read so far: a message's or a batch entry's.
private struct Fields: DirectFields {
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

private struct RowIntentReader: DirectReader {
    var parser: JSONParser
    var batch = ClientBatch()
    var entries = 0

    init(parser: JSONParser) { self.parser = parser }

    mutating func message(limits: ProtocolLimits) throws -> ClientMessage {
        parser.skipBlanks()
        var fields = Fields()
        try readObject(into: &fields, allowing: .all)
        parser.skipBlanks()
        guard parser.index == parser.bytes.count, let kind = fields.type, fields.seen.contains(.table),
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

    mutating func readKey() throws -> Keys {
        let key = try parser.readWord()
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
        guard parser.word(key, is: candidate.0) else { throw GiveUp() }
        return candidate.1
    }

    mutating func readValue(of key: Keys, into fields: inout Fields) throws {
        switch key {
        case .type: fields.type = try readKind()
        case .table: fields.table = try readTableName()
        case .base: fields.base = UInt64(try parser.readCount())
        case .ref: fields.ref = try parser.readString()
        case .at: fields.at = try parser.readRowPath()
        case .from: fields.from = try parser.readRowPath()
        case .to: fields.to = try parser.readRowPath()
        case .row: fields.row = try parser.readString()
        case .value: fields.value = try parser.parseValue()
        case .patch: fields.patch = try parser.parseValue()
        case .editable: fields.editable = try parser.readBool()
        case .movable: fields.movable = try parser.readBool()
        case .editingStyle: fields.editingStyle = try parser.readEditingStyle()
        default: try readList(key)
        }
    }

    /// The type, when it is one of the row intents.
    mutating func readKind() throws -> Intent.Kind {
        let name = try parser.readWord()
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
        guard parser.word(name, is: candidate.0) else { throw GiveUp() }
        return candidate.1
    }

    /// A valid table name, written without escapes: `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`.
    mutating func readTableName() throws -> String {
        guard parser.next == UInt8(ascii: "\"") else { throw GiveUp() }
        let start = parser.index + 1
        var end = start
        while end < parser.bytes.count, end - start <= 64 {
            let byte = parser.bytes[end]
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
        guard end > start, end - start <= 64, end < parser.bytes.count, parser.bytes[end] == UInt8(ascii: "\"") else {
            throw GiveUp()
        }
        parser.index = end + 1
        return String(decoding: UnsafeBufferPointer(rebasing: parser.bytes[start..<end]), as: UTF8.self)
    }

    /// A batch's row list: its entries go straight into ``batch``.
    mutating func readList(_ list: Keys) throws {
        guard parser.next == UInt8(ascii: "[") else { throw GiveUp() }
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
