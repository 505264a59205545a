import TableModel

extension ClientMessage {
    /// A row intent (`insert`, `delete`, `move`, `edit`, `patch`) written straight into bytes, its members in the
    /// sorted order of ``JSONValue/jsonBytes``: the same text as `json.jsonBytes` without a dictionary per object.
    /// Nil for every other message. The server encodes every intent that carries a ref once more to fingerprint it
    /// (a retry is told from a reused ref by it), and clients encode each intent they send.
    func directlyEncoded() -> [UInt8]? {
        guard case .intent(let table, let base, let intent) = body else { return nil }
        var writer = JSONWriter(capacity: 160)
        switch intent {
        case .insert(let at, let row):
            writer.beginObject(firstKey: "at")
            at.write(to: &writer)
            write(base: base, to: &writer)
            if !row.editable {
                writer.key("editable")
                writer.bool(false)
            }
            if row.editingStyle != .delete {
                writer.key("editingStyle")
                writer.string(row.editingStyle.rawValue)
            }
            if !row.movable {
                writer.key("movable")
                writer.bool(false)
            }
            write(ref: ref, table: table, type: "insert", to: &writer)
            writer.key("value")
            writer.value(row.value)
        case .delete(let row):
            writer.beginObject(firstKey: "at")
            row.path.write(to: &writer)
            write(base: base, to: &writer)
            write(ref: ref, row: row.id, table: table, type: "delete", to: &writer)
        case .move(let from, let to):
            writer.beginObject()
            write(base: base, to: &writer)
            writer.key("from")
            from.path.write(to: &writer)
            write(ref: ref, row: from.id, table: table, to: &writer)
            writer.key("to")
            to.write(to: &writer)
            writer.key("type")
            writer.string("move")
        case .edit(let row, let value, let editable, let movable, let editingStyle):
            writer.beginObject(firstKey: "at")
            row.path.write(to: &writer)
            write(base: base, to: &writer)
            if let editable {
                writer.key("editable")
                writer.bool(editable)
            }
            if let editingStyle {
                writer.key("editingStyle")
                writer.string(editingStyle.rawValue)
            }
            if let movable {
                writer.key("movable")
                writer.bool(movable)
            }
            write(ref: ref, row: row.id, table: table, type: "edit", to: &writer)
            writer.key("value")
            writer.value(value)
        case .patch(let row, let patch):
            writer.beginObject(firstKey: "at")
            row.path.write(to: &writer)
            write(base: base, to: &writer)
            writer.key("patch")
            writer.value(patch)
            write(ref: ref, row: row.id, table: table, type: "patch", to: &writer)
        case .insertSection, .deleteSection, .moveSection, .editSection, .batch:
            return nil
        }
        writer.endObject()
        return writer.bytes
    }

    /// `base`, a number as `json` writes it (through `Double`), when given.
    private func write(base: UInt64?, to writer: inout JSONWriter) {
        guard let base else { return }
        writer.key("base")
        writer.value(.number(Double(base)))
    }

    /// `ref`, `row` (each when given), `table` and, when given, `type`: the members that sort between the flags
    /// and `to`/`value`.
    private func write(
        ref: String?, row: String? = nil, table: String, type: StaticString? = nil, to writer: inout JSONWriter
    ) {
        if let ref {
            writer.key("ref")
            writer.string(ref)
        }
        if let row {
            writer.key("row")
            writer.string(row)
        }
        writer.key("table")
        writer.string(table)
        if let type {
            writer.key("type")
            writer.string(type.description)
        }
    }
}
