import TableModel

/// Keys in the input line and in delete confirmations, and how typed text becomes a value.
extension Editor {
    /// A key while the input line is open: typing, editing the text, Escape to cancel, Enter to commit.
    mutating func handleInput(_ key: Key, _ input: Input) -> [EditorCommand] {
        var input = input
        switch key {
        case .character(let c):
            input.text.append(c)
            mode = .input(input)
        case .backspace:
            if !input.text.isEmpty { input.text.removeLast() }
            mode = .input(input)
        case .ctrl("u"):
            input.text = ""
            mode = .input(input)
        case .escape, .ctrl("c"):
            mode = .browse
            if case .editRow(let id) = input.purpose { return [.endEditingRow(id)] }
        case .enter:
            return commit(input)
        default: break
        }
        return []
    }

    private mutating func commit(_ input: Input) -> [EditorCommand] {
        let base = table.version
        switch input.purpose {
        case .editRow(let id):
            // An item's text is its title: a patch of the title alone keeps its other fields, also others' changes.
            if let path = path(ofRow: id), let row = table.row(at: path), Self.title(row.value) != nil {
                mode = .browse
                return [
                    .send(
                        .patch(RowRef(path, id: id), patch: ["title": .string(input.text)]), base: base, label: "edit",
                        requested: path),
                    .endEditingRow(id),
                ]
            }
            guard let value = parseValue(input.text) else { return [] }
            mode = .browse
            guard let path = path(ofRow: id) else { return [.endEditingRow(id)] }
            return [
                .send(.edit(RowRef(path, id: id), value: value), base: base, label: "edit", requested: path),
                .endEditingRow(id),
            ]
        case .addRow(let after):
            guard let value = parseValue(input.text) else { return [] }
            mode = .browse
            guard let at = insertionPath(after: after) ?? insertionPath(after: cursor) else { return [] }
            return [.send(.insert(at: at, row: RowContent(value: value)), base: base, label: "insert", requested: at)]
        case .addSection(let after):
            mode = .browse
            let at = after.flatMap { index(ofSection: $0) }.map { $0 + 1 } ?? 0
            let header = input.text.isEmpty ? nil : input.text
            return [
                .send(
                    .insertSection(at: at, section: SectionContent(header: header)), base: base, label: "new section",
                    requested: nil)
            ]
        case .header(let id), .footer(let id):
            mode = .browse
            guard let s = index(ofSection: id) else { return [] }
            let text: String? = input.text.isEmpty ? nil : input.text
            let intent: Intent
            if case .header = input.purpose {
                intent = .editSection(SectionRef(s, id: id), header: .some(text))
            } else {
                intent = .editSection(SectionRef(s, id: id), footer: .some(text))
            }
            return [.send(intent, base: base, label: "section", requested: nil)]
        }
    }

    /// The key answering a row delete's confirmation: `y` deletes, anything else cancels.
    mutating func handleConfirm(_ key: Key, _ ids: [String]) -> [EditorCommand] {
        mode = .browse
        var commands: [EditorCommand] = []
        if key == .character("y") || key == .character("Y") {
            let refs = ids.compactMap { id in path(ofRow: id).map { RowRef($0, id: id) } }
            if refs.count == 1 {
                commands.append(.send(.delete(refs[0]), base: table.version, label: "delete", requested: nil))
            } else if !refs.isEmpty {
                commands.append(
                    .send(
                        .batch(ClientBatch(deleteRows: refs)), base: table.version, label: "delete \(refs.count) rows",
                        requested: nil))
                selection = []
            }
        } else {
            status = Status(text: "delete cancelled", isError: false)
        }
        if ids.count == 1 { commands.append(.endEditingRow(ids[0])) }
        return commands
    }

    /// The key answering a section delete's confirmation: `y` deletes, anything else cancels.
    mutating func handleConfirmSection(_ key: Key, _ id: String) -> [EditorCommand] {
        mode = .browse
        guard key == .character("y") || key == .character("Y") else {
            status = Status(text: "delete cancelled", isError: false)
            return []
        }
        guard let s = index(ofSection: id) else { return [] }
        return [
            .send(.deleteSection(SectionRef(s, id: id)), base: table.version, label: "delete section", requested: nil)
        ]
    }

    /// Typed text is a string; text starting with `=` is JSON (`=42`, `=true`, `={"a":1}`, `="=x"`).
    mutating func parseValue(_ text: String) -> JSONValue? {
        guard text.hasPrefix("=") else { return .string(text) }
        do {
            return try JSONValue(parsing: String(text.dropFirst()))
        } catch {
            status = Status(text: "not JSON after '=': \(error)", isError: true)
            return nil
        }
    }

    /// A value as shown: strings plainly; an item (an object with a string `title`) as its title, after `[x]` or
    /// `[ ]` when its `done` is a boolean and before its `note`; anything else as compact JSON.
    public static func display(_ value: JSONValue) -> String {
        if case .string(let text) = value { return text }
        guard let title = title(value) else { return value.jsonText }
        var text = title
        if let done = done(value) { text = (done ? "[x] " : "[ ] ") + text }
        if case .object(let fields) = value, case .string(let note)? = fields["note"] { text += " — \(note)" }
        return text
    }

    /// A value as put in the input line for editing (the inverse of ``parseValue(_:)``); an item's title.
    public static func inputText(_ value: JSONValue) -> String {
        if let title = title(value) { return title }
        if case .string(let text) = value, !text.hasPrefix("=") { return text }
        return "=" + value.jsonText
    }

    /// An item's title: the `title` of an object value, when it is a string.
    static func title(_ value: JSONValue) -> String? {
        if case .object(let fields) = value, case .string(let title)? = fields["title"] { return title }
        return nil
    }

    /// An item's `done` mark, when it is a boolean.
    static func done(_ value: JSONValue) -> Bool? {
        if case .object(let fields) = value, case .bool(let done)? = fields["done"] { return done }
        return nil
    }
}
