/// A table-name pattern from a tokens file: `*` matches any run of characters (including none), `?` exactly one;
/// everything else matches itself. `*` alone matches every table.
public struct TablePattern: Sendable, Hashable, CustomStringConvertible {
    public let description: String
    private let pattern: [Character]

    public init(_ pattern: String) {
        self.description = pattern
        self.pattern = Array(pattern)
    }

    /// Whether `name` matches the whole pattern.
    public func matches(_ name: String) -> Bool {
        // Iterative glob matching with single-star backtracking: linear in practice, no recursion.
        let text = Array(name)
        var p = 0
        var t = 0
        var starP = -1
        var starT = 0
        while t < text.count {
            if p < pattern.count, pattern[p] == "?" || pattern[p] == text[t] {
                p += 1
                t += 1
            } else if p < pattern.count, pattern[p] == "*" {
                starP = p
                starT = t
                p += 1
            } else if starP >= 0 {
                p = starP + 1
                starT += 1
                t = starT
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }
}
