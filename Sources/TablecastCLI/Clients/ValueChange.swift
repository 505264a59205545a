import TableModel

/// How `watch --pretty` and `history --pretty` show a row reload: a row whose value stays an object (an item, a
/// patch of some of its fields) by the fields that changed, `[0,1] "Yogurt": done → true`; any other by its values.
enum ValueChange {
    /// `[0,1] "Yogurt": done → true, note removed` when both values are objects and some field changed, with the
    /// row named by its title when it has one; `edit [0,1] "old" → "new"` otherwise (`edit [0,1] → "new"` when `old`
    /// is not known).
    static func text(at path: RowPath, from old: JSONValue?, to new: JSONValue) -> String {
        guard case .object(let before)? = old, case .object(let after) = new, let fields = fields(before, after)
        else {
            return "edit \(path)\(old.map { " \($0.jsonText)" } ?? "") → \(new.jsonText)"
        }
        let title = after["title"] ?? before["title"]
        if case .string? = title { return "\(path) \(title!.jsonText): \(fields)" }
        return "\(path): \(fields)"
    }

    /// The fields that differ, in name order: `done → true`, `note removed`; nil when none does.
    private static func fields(_ before: [String: JSONValue], _ after: [String: JSONValue]) -> String? {
        var parts: [String] = []
        for name in Set(before.keys).union(after.keys).sorted() {
            switch (before[name], after[name]) {
            case (let old, let new?) where old != new: parts.append("\(name) → \(new.jsonText)")
            case (_?, nil): parts.append("\(name) removed")
            default: break
            }
        }
        return parts.isEmpty ? nil : parts.joined(separator: ", ")
    }
}
