import TableModel

// `update` is nearly every message a subscriber receives, so it is read straight from the bytes, as the server reads
// row intents: one pass over the members with a switch on the key's bytes, no dictionary for the message or its
// entries, no key strings, no field paths, the lists read straight into the batch. Only row values become trees.
// Anything this reader does not take for certain (another message type, an escaped or unknown key, a duplicate, a
// value of the wrong kind, a section list that is not empty, a syntax error) makes it give up, and the general
// decoder reads the message again: so it accepts a subset of what that decoder accepts, decodes it to the same
// message, and every error still comes from the general decoder.

extension ServerMessage {
    /// The message when it is an `update` this reader takes; nil when the general decoder must read it.
    package static func decodeUpdate(_ bytes: [UInt8]) -> ServerMessage? {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = UpdateReader(parser: JSONParser(bytes: buffer, maxDepth: JSONValue.defaultMaxDepth))
            return try? reader.message()
        }
    }
}

/// The members the reader knows, as bits of a set: the message's, its origin's, and its entries'.
private struct UpdateKeys: OptionSet {
    let rawValue: UInt32

    static let type = UpdateKeys(rawValue: 1 << 0)
    static let table = UpdateKeys(rawValue: 1 << 1)
    static let version = UpdateKeys(rawValue: 1 << 2)
    static let origin = UpdateKeys(rawValue: 1 << 3)
    static let deleteSections = UpdateKeys(rawValue: 1 << 4)
    static let insertSections = UpdateKeys(rawValue: 1 << 5)
    static let reloadSections = UpdateKeys(rawValue: 1 << 6)
    static let moveSections = UpdateKeys(rawValue: 1 << 7)
    static let deleteRows = UpdateKeys(rawValue: 1 << 8)
    static let insertRows = UpdateKeys(rawValue: 1 << 9)
    static let reloadRows = UpdateKeys(rawValue: 1 << 10)
    static let moveRows = UpdateKeys(rawValue: 1 << 11)
    static let client = UpdateKeys(rawValue: 1 << 12)
    static let ref = UpdateKeys(rawValue: 1 << 13)
    static let at = UpdateKeys(rawValue: 1 << 14)
    static let from = UpdateKeys(rawValue: 1 << 15)
    static let to = UpdateKeys(rawValue: 1 << 16)
    static let row = UpdateKeys(rawValue: 1 << 17)
    static let id = UpdateKeys(rawValue: 1 << 18)
    static let value = UpdateKeys(rawValue: 1 << 19)
    static let editable = UpdateKeys(rawValue: 1 << 20)
    static let movable = UpdateKeys(rawValue: 1 << 21)
    static let editingStyle = UpdateKeys(rawValue: 1 << 22)

    static let lists: UpdateKeys = [
        .deleteSections, .insertSections, .reloadSections, .moveSections, .deleteRows, .insertRows, .reloadRows,
        .moveRows,
    ]
    static let message: UpdateKeys = Self([.type, .table, .version, .origin]).union(lists)
    static let originMembers: UpdateKeys = [.client, .ref]
    static let flags: UpdateKeys = [.editable, .movable, .editingStyle]
    // The members of each entry and of a row, as the general decoder allows them.
    static let insertEntry: UpdateKeys = [.at, .row]
    static let reloadEntry: UpdateKeys = Self([.at, .value]).union(flags)
    static let moveEntry: UpdateKeys = [.from, .to]
    static let rowMembers: UpdateKeys = Self([.id, .value]).union(flags)
}

/// The members of one object read so far: the message's, its origin's, an entry's or a row's.
private struct UpdateFields: DirectFields {
    var seen: UpdateKeys = []
    var table = ""
    var version: UInt64 = 0
    var client = ""
    var ref: String?
    var at = RowPath(section: 0, row: 0)
    var from = RowPath(section: 0, row: 0)
    var to = RowPath(section: 0, row: 0)
    var row: Row?
    var id = ""
    var value: JSONValue?
    var editable: Bool?
    var movable: Bool?
    var editingStyle: EditingStyle?
}

private struct UpdateReader: DirectReader {
    var parser: JSONParser
    var batch = Batch()

    init(parser: JSONParser) { self.parser = parser }

    mutating func message() throws -> ServerMessage {
        parser.skipBlanks()
        var fields = UpdateFields()
        try readObject(into: &fields, allowing: .message)
        parser.skipBlanks()
        guard parser.index == parser.bytes.count,
            fields.seen.isSuperset(of: [.type, .table, .version, .origin])
        else { throw GiveUp() }
        return .update(
            ServerMessage.Update(
                table: fields.table, version: fields.version, originClient: fields.client, originRef: fields.ref,
                batch: batch))
    }

    mutating func readKey() throws -> UpdateKeys {
        let key = try parser.readWord()
        let start = key.startIndex
        // By length, then by the bytes that tell the names of that length apart; the whole name is compared last.
        let candidate: (StaticString, UpdateKeys)
        switch (key.count, key.first ?? 0) {
        case (2, UInt8(ascii: "a")): candidate = ("at", .at)
        case (2, UInt8(ascii: "t")): candidate = ("to", .to)
        case (2, UInt8(ascii: "i")): candidate = ("id", .id)
        case (3, UInt8(ascii: "r")): candidate = key[start + 2] == UInt8(ascii: "f") ? ("ref", .ref) : ("row", .row)
        case (4, UInt8(ascii: "t")): candidate = ("type", .type)
        case (4, UInt8(ascii: "f")): candidate = ("from", .from)
        case (5, UInt8(ascii: "t")): candidate = ("table", .table)
        case (5, UInt8(ascii: "v")): candidate = ("value", .value)
        case (6, UInt8(ascii: "o")): candidate = ("origin", .origin)
        case (6, UInt8(ascii: "c")): candidate = ("client", .client)
        case (7, UInt8(ascii: "v")): candidate = ("version", .version)
        case (7, UInt8(ascii: "m")): candidate = ("movable", .movable)
        case (8, UInt8(ascii: "e")): candidate = ("editable", .editable)
        case (8, UInt8(ascii: "m")): candidate = ("moveRows", .moveRows)
        case (10, UInt8(ascii: "d")): candidate = ("deleteRows", .deleteRows)
        case (10, UInt8(ascii: "i")): candidate = ("insertRows", .insertRows)
        case (10, UInt8(ascii: "r")): candidate = ("reloadRows", .reloadRows)
        case (12, UInt8(ascii: "m")): candidate = ("moveSections", .moveSections)
        case (12, UInt8(ascii: "e")): candidate = ("editingStyle", .editingStyle)
        case (14, UInt8(ascii: "d")): candidate = ("deleteSections", .deleteSections)
        case (14, UInt8(ascii: "i")): candidate = ("insertSections", .insertSections)
        case (14, UInt8(ascii: "r")): candidate = ("reloadSections", .reloadSections)
        default: throw GiveUp()
        }
        guard parser.word(key, is: candidate.0) else { throw GiveUp() }
        return candidate.1
    }

    mutating func readValue(of key: UpdateKeys, into fields: inout UpdateFields) throws {
        switch key {
        case .type:
            let name = try parser.readWord()
            guard name.count == 6, parser.word(name, is: "update") else { throw GiveUp() }
        case .table: fields.table = try parser.readString()
        case .version: fields.version = UInt64(try parser.readCount())
        case .origin:
            var origin = UpdateFields()
            try readObject(into: &origin, allowing: .originMembers)
            guard origin.seen.contains(.client) else { throw GiveUp() }
            fields.client = origin.client
            fields.ref = origin.ref
        case .client: fields.client = try parser.readString()
        case .ref:
            // The general decoder takes null for an absent ref.
            if parser.next == UInt8(ascii: "n") {
                guard case .null = try parser.parseValue() else { throw GiveUp() }
            } else {
                fields.ref = try parser.readString()
            }
        case .at: fields.at = try parser.readRowPath()
        case .from: fields.from = try parser.readRowPath()
        case .to: fields.to = try parser.readRowPath()
        case .row:
            var row = UpdateFields()
            try readObject(into: &row, allowing: .rowMembers)
            guard let value = row.value, row.seen.contains(.id) else { throw GiveUp() }
            fields.row = Row(
                id: row.id, value: value, editable: row.editable ?? true, movable: row.movable ?? true,
                editingStyle: row.editingStyle ?? .delete)
        case .id: fields.id = try parser.readString()
        case .value: fields.value = try parser.parseValue()
        case .editable: fields.editable = try parser.readBool()
        case .movable: fields.movable = try parser.readBool()
        case .editingStyle: fields.editingStyle = try parser.readEditingStyle()
        default: try readList(key)
        }
    }

    /// One of the batch's lists, read straight into ``batch``; the section lists only when empty (they are rare,
    /// and the general decoder reads them).
    mutating func readList(_ list: UpdateKeys) throws {
        try readElements(UInt8(ascii: "["), UInt8(ascii: "]")) { reader in
            var entry = UpdateFields()
            switch list {
            case .deleteSections:
                reader.batch.deleteSections.append(try reader.parser.readCount())
            case .deleteRows:
                reader.batch.deleteRows.append(try reader.parser.readRowPath())
            case .insertRows:
                try reader.readObject(into: &entry, allowing: UpdateKeys.insertEntry)
                guard let row = entry.row, entry.seen.contains(.at) else { throw GiveUp() }
                reader.batch.insertRows.append(.init(at: entry.at, row: row))
            case .reloadRows:
                try reader.readObject(into: &entry, allowing: UpdateKeys.reloadEntry)
                guard let value = entry.value, entry.seen.contains(.at) else { throw GiveUp() }
                reader.batch.reloadRows.append(
                    .init(
                        at: entry.at, value: value, editable: entry.editable, movable: entry.movable,
                        editingStyle: entry.editingStyle))
            case .moveRows:
                try reader.readObject(into: &entry, allowing: UpdateKeys.moveEntry)
                guard entry.seen.isSuperset(of: [.from, .to]) else { throw GiveUp() }
                reader.batch.moveRows.append(.init(from: entry.from, to: entry.to))
            default:
                throw GiveUp()
            }
        }
    }
}
