/// How much of each table's history the store keeps readable: the last `versions` versions and/or the versions
/// committed within the last `age` milliseconds. A version either bound keeps is kept (with both, the longer one
/// wins); the table at every kept version can be rebuilt, because the snapshot at or below the oldest one is kept
/// with every snapshot after it.
public struct HistoryRetention: Sendable, Equatable, CustomStringConvertible {
    /// Keep at least the last this many versions of each table.
    public var versions: Int64?
    /// Keep at least the versions committed within this many milliseconds.
    public var age: Int64?

    /// Keeps everything: nothing is ever pruned.
    public static let all = HistoryRetention(versions: nil, age: nil)

    public init(versions: Int64? = nil, age: Int64? = nil) {
        self.versions = versions
        self.age = age
    }

    /// A retention written as `all`, a count of versions (`10000`), a duration with unit `s`, `m`, `h`, `d` or `w`
    /// (`30d`), or one of each separated by a comma (`10000,30d`). Nil when `text` is none of these.
    public init?(_ text: String) {
        if text == "all" {
            self = .all
            return
        }
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count) else { return nil }
        var retention = HistoryRetention()
        for part in parts {
            if let count = Int64(part), count >= 0, retention.versions == nil {
                retention.versions = count
            } else if let age = Self.milliseconds(part), retention.age == nil {
                retention.age = age
            } else {
                return nil
            }
        }
        self = retention
    }

    private static let units: [Character: Int64] = [
        "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000,
    ]

    private static func milliseconds(_ text: Substring) -> Int64? {
        guard let unit = text.last.flatMap({ units[$0] }), let count = Int64(text.dropLast()), count >= 0,
            count <= Int64.max / unit
        else { return nil }
        return count * unit
    }

    public var description: String {
        if self == .all { return "all" }
        var parts: [String] = []
        if let versions { parts.append("\(versions)") }
        if let age {
            let unit = Self.units.filter { age % $0.value == 0 }.max { $0.value < $1.value }
            parts.append(unit.map { "\(age / $0.value)\($0.key)" } ?? "\(age)ms")
        }
        return parts.joined(separator: ",")
    }
}
