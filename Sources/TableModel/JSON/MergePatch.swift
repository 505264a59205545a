extension JSONValue {
    /// The value with `patch` applied as an RFC 7386 JSON merge patch: an object patch sets the members it names
    /// (merging nested objects member by member), removes those it sets to `null` and keeps every other member;
    /// any other patch replaces the value. A value that is not an object is treated as `{}` under an object patch.
    public func merging(patch: JSONValue) -> JSONValue {
        guard case .object(let changes) = patch else { return patch }
        var members: [String: JSONValue]
        if case .object(let current) = self { members = current } else { members = [:] }
        for (name, change) in changes {
            if change == .null {
                members[name] = nil
            } else {
                members[name] = (members[name] ?? .null).merging(patch: change)
            }
        }
        return .object(members)
    }

    /// The merge patch that turns `self.merging(patch: patch)` back into `self`, touching only what `patch` names
    /// (so that undoing it keeps what others changed in other members meanwhile), or `nil` when no merge patch
    /// can (the value holds a `null` member the patch changed, which a merge patch can only remove).
    public func mergePatch(undoing patch: JSONValue) -> JSONValue? {
        let inverse = inversePatch(of: patch)
        // Spelt out: in `? inverse : nil`, `nil` would be JSON null.
        guard merging(patch: patch).merging(patch: inverse) == self else { return Optional.none }
        return inverse
    }

    private func inversePatch(of patch: JSONValue) -> JSONValue {
        guard case .object(let changes) = patch, case .object(let members) = self else { return self }
        var inverse: [String: JSONValue] = [:]
        for (name, change) in changes {
            guard let old = members[name] else {
                // The member was absent: remove whatever the patch set (a removal of it again is harmless).
                inverse[name] = .null
                continue
            }
            inverse[name] = old.inversePatch(of: change)
        }
        return .object(inverse)
    }
}
