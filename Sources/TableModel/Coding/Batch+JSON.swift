extension Batch {
    /// The update as clients receive it: all eight lists, index paths as `[section, row]`:
    /// `deleteSections: [s]`, `insertSections: [{at, section}]`, `reloadSections: [{at, header, footer}]`,
    /// `moveSections: [{from, to}]`, `deleteRows: [[s, r]]`, `insertRows: [{at, row}]`,
    /// `reloadRows: [{at, value, editable?, movable?, editingStyle?}]`, `moveRows: [{from, to}]`.
    public var json: JSONValue {
        .object([
            "deleteSections": .array(deleteSections.map { .number(Double($0)) }),
            "insertSections": .array(
                insertSections.map { .object(["at": .number(Double($0.at)), "section": $0.section.json]) }),
            "reloadSections": .array(
                reloadSections.map {
                    .object(["at": .number(Double($0.at)), "header": $0.header.json, "footer": $0.footer.json])
                }),
            "moveSections": .array(
                moveSections.map { .object(["from": .number(Double($0.from)), "to": .number(Double($0.to))]) }),
            "deleteRows": .array(deleteRows.map(\.json)),
            "insertRows": .array(insertRows.map { .object(["at": $0.at.json, "row": $0.row.json]) }),
            "reloadRows": .array(
                reloadRows.map { reload in
                    var members: [String: JSONValue] = ["at": reload.at.json, "value": reload.value]
                    if let editable = reload.editable { members["editable"] = .bool(editable) }
                    if let movable = reload.movable { members["movable"] = .bool(movable) }
                    if let editingStyle = reload.editingStyle {
                        members["editingStyle"] = .string(editingStyle.rawValue)
                    }
                    return .object(members)
                }),
            "moveRows": .array(moveRows.map { .object(["from": $0.from.json, "to": $0.to.json]) }),
        ])
    }

    /// Decodes ``json``; absent lists are empty.
    public init(json: JSONValue) throws(JSONDecodingError) {
        let object = try JSONObjectReader(json, path: "", allowing: Batch.listNames)
        self.init(
            deleteSections: try object.optional("deleteSections", JSONDecode.array(JSONDecode.count)) ?? [],
            insertSections: try object.optional(
                "insertSections",
                JSONDecode.array { (value, path) throws(JSONDecodingError) in
                    let entry = try JSONObjectReader(value, path: path, allowing: ["at", "section"])
                    return SectionInsert(
                        at: try entry.required("at", JSONDecode.count),
                        section: try entry.required("section") { (value, path) throws(JSONDecodingError) in
                            try Section(json: value, path: path)
                        })
                }) ?? [],
            reloadSections: try object.optional(
                "reloadSections",
                JSONDecode.array { (value, path) throws(JSONDecodingError) in
                    let entry = try JSONObjectReader(value, path: path, allowing: ["at", "header", "footer"])
                    return SectionReload(
                        at: try entry.required("at", JSONDecode.count),
                        header: try entry.required("header", JSONDecode.nullableString),
                        footer: try entry.required("footer", JSONDecode.nullableString))
                }) ?? [],
            moveSections: try object.optional(
                "moveSections",
                JSONDecode.array { (value, path) throws(JSONDecodingError) in
                    let entry = try JSONObjectReader(value, path: path, allowing: ["from", "to"])
                    return SectionMove(
                        from: try entry.required("from", JSONDecode.count),
                        to: try entry.required("to", JSONDecode.count))
                }) ?? [],
            deleteRows: try object.optional("deleteRows", JSONDecode.array(JSONDecode.rowPath)) ?? [],
            insertRows: try object.optional(
                "insertRows",
                JSONDecode.array { (value, path) throws(JSONDecodingError) in
                    let entry = try JSONObjectReader(value, path: path, allowing: ["at", "row"])
                    return RowInsert(
                        at: try entry.required("at", JSONDecode.rowPath),
                        row: try entry.required("row") { (value, path) throws(JSONDecodingError) in
                            try Row(json: value, path: path)
                        })
                }) ?? [],
            reloadRows: try object.optional(
                "reloadRows",
                JSONDecode.array { (value, path) throws(JSONDecodingError) in
                    let entry = try JSONObjectReader(
                        value, path: path, allowing: ["at", "value", "editable", "movable", "editingStyle"])
                    return RowReload(
                        at: try entry.required("at", JSONDecode.rowPath),
                        value: try entry.required("value", JSONDecode.any),
                        editable: try entry.optional("editable", JSONDecode.bool),
                        movable: try entry.optional("movable", JSONDecode.bool),
                        editingStyle: try entry.optional("editingStyle", JSONDecode.editingStyle))
                }) ?? [],
            moveRows: try object.optional(
                "moveRows",
                JSONDecode.array { (value, path) throws(JSONDecodingError) in
                    let entry = try JSONObjectReader(value, path: path, allowing: ["from", "to"])
                    return RowMove(
                        from: try entry.required("from", JSONDecode.rowPath),
                        to: try entry.required("to", JSONDecode.rowPath))
                }) ?? [])
    }

    static let listNames = Set(BatchList.committed.map(\.rawValue))
}
