// Direct writers for what every committed intent encodes: the batch (for the log and inside the `update`) and the
// rows and sections it carries. Members are written sorted by name, so the bytes equal those of `json.jsonBytes`;
// a test holds the two to that.

extension Batch {
    /// The text of ``json``, written without building it.
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter(capacity: estimatedByteCount)
        writer.beginObject()
        writeMembers(to: &writer)
        writer.endObject()
        return writer.bytes
    }

    /// About the length of the text when rows are small, so that writing it seldom grows the buffer (each growth
    /// copies all written so far) and the kept text seldom has much unused room.
    package var estimatedByteCount: Int {
        // An inserted row carries its id besides the value: `{"at":[1,0],"row":{"id":"r1000","value":…}}`.
        160 + 12 * deleteRows.count + 28 * moveRows.count + 68 * insertRows.count + 48 * reloadRows.count
            + 24 * (deleteSections.count + insertSections.count + reloadSections.count + moveSections.count)
    }

    /// Writes the eight lists as members of the object `writer` is in, sorted by name.
    package func writeMembers(to writer: inout JSONWriter) {
        writer.beginArray(member: "deleteRows")
        for path in deleteRows { path.write(to: &writer) }
        writer.endArray()
        writer.beginArray(member: "deleteSections")
        for section in deleteSections { writer.integer(section) }
        writer.endArray()
        writer.beginArray(member: "insertRows")
        insertRows.forEachInPlace { insert in
            writer.beginObject(firstKey: "at")
            insert.at.write(to: &writer)
            writer.key("row")
            insert.row.write(to: &writer)
            writer.endObject()
        }
        writer.endArray()
        writer.beginArray(member: "insertSections")
        for insert in insertSections {
            writer.beginObject(firstKey: "at")
            writer.integer(insert.at)
            writer.key("section")
            insert.section.write(to: &writer)
            writer.endObject()
        }
        writer.endArray()
        writer.beginArray(member: "moveRows")
        for move in moveRows {
            writer.beginObject(firstKey: "from")
            move.from.write(to: &writer)
            writer.key("to")
            move.to.write(to: &writer)
            writer.endObject()
        }
        writer.endArray()
        writer.beginArray(member: "moveSections")
        for move in moveSections {
            writer.beginObject(firstKey: "from")
            writer.integer(move.from)
            writer.key("to")
            writer.integer(move.to)
            writer.endObject()
        }
        writer.endArray()
        writer.beginArray(member: "reloadRows")
        reloadRows.forEachInPlace { reload in
            writer.beginObject(firstKey: "at")
            reload.at.write(to: &writer)
            if let editable = reload.editable {
                writer.key("editable")
                writer.bool(editable)
            }
            if let editingStyle = reload.editingStyle {
                writer.key("editingStyle")
                writer.string(editingStyle.rawValue)
            }
            if let movable = reload.movable {
                writer.key("movable")
                writer.bool(movable)
            }
            writer.key("value")
            writer.value(reload.value)
            writer.endObject()
        }
        writer.endArray()
        writer.beginArray(member: "reloadSections")
        for reload in reloadSections {
            writer.beginObject(firstKey: "at")
            writer.integer(reload.at)
            writer.key("footer")
            writer.optionalString(reload.footer)
            writer.key("header")
            writer.optionalString(reload.header)
            writer.endObject()
        }
        writer.endArray()
    }
}

extension Array {
    /// Calls `body` with each element where it is stored. The element is passed `inout` only so that the optimizer
    /// reads it in place: an `inout` argument cannot change during the call, while an element read from the array
    /// is copied first (a retain and release of each reference it holds) whenever the call might write memory, as
    /// every writer call does. `body` must not modify the element: the storage may be shared with other arrays.
    @inline(__always)
    fileprivate func forEachInPlace(_ body: (inout Element) -> Void) {
        withUnsafeBufferPointer { elements in
            let elements = UnsafeMutableBufferPointer(mutating: elements)
            for index in elements.indices { body(&elements[index]) }
        }
    }
}

extension RowPath {
    /// Writes `[section, row]`.
    public func write(to writer: inout JSONWriter) {
        writer.pair(section, row)
    }
}

extension Row {
    /// Writes ``json``'s object: flags only when not their defaults.
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        if !editable {
            writer.key("editable")
            writer.bool(false)
        }
        if editingStyle != .delete {
            writer.key("editingStyle")
            writer.string(editingStyle.rawValue)
        }
        writer.key("id")
        writer.string(id)
        if !movable {
            writer.key("movable")
            writer.bool(false)
        }
        writer.key("value")
        writer.value(value)
        writer.endObject()
    }
}

extension Section {
    /// Writes ``json``'s object.
    public func write(to writer: inout JSONWriter) {
        writer.beginObject(firstKey: "footer")
        writer.optionalString(footer)
        writer.key("header")
        writer.optionalString(header)
        writer.key("id")
        writer.string(id)
        writer.beginArray(member: "rows")
        for row in rows { row.write(to: &writer) }
        writer.endArray()
        writer.endObject()
    }
}
