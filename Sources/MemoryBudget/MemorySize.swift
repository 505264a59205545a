#if canImport(Glibc)
    import Glibc
#endif

/// Sizes as people write them on a command line, and the machine's memory the default budget is a share of.
public enum MemorySize {
    /// Parses `512M`, `4G`, `1.5GiB`, `800MB` or a plain number of bytes (binary units: K = 1,024); nil when the
    /// text is not a positive size.
    public static func parse(_ text: String) -> Int? {
        var digits = Substring(text.trimmingSpaces().uppercased())
        let units: [(String, Double)] = [
            ("TIB", 0x1p40), ("GIB", 0x1p30), ("MIB", 0x1p20), ("KIB", 0x1p10), ("TB", 0x1p40), ("GB", 0x1p30),
            ("MB", 0x1p20), ("KB", 0x1p10), ("T", 0x1p40), ("G", 0x1p30), ("M", 0x1p20), ("K", 0x1p10), ("B", 1),
        ]
        var scale = 1.0
        if let (suffix, factor) = units.first(where: { digits.hasSuffix($0.0) }) {
            digits = digits.dropLast(suffix.count)
            scale = factor
        }
        guard let number = Double(digits.trimmingSpaces()), number.isFinite, number > 0 else { return nil }
        let bytes = (number * scale).rounded(.down)
        guard bytes >= 1, bytes < 0x1p62 else { return nil }
        return Int(bytes)
    }

    /// `bytes` for a person: `1.5 GiB`, `512 MiB`, `800 KiB` or `12 bytes`.
    public static func text(_ bytes: Int) -> String {
        let units: [(String, Double)] = [("TiB", 0x1p40), ("GiB", 0x1p30), ("MiB", 0x1p20), ("KiB", 0x1p10)]
        for (name, factor) in units where Double(bytes) >= factor {
            let value = Double(bytes) / factor
            let rounded = (value * 10).rounded() / 10
            return rounded == rounded.rounded() ? "\(Int(rounded)) \(name)" : "\(rounded) \(name)"
        }
        return "\(bytes) bytes"
    }

    /// The memory this process may use: the machine's physical memory, or the cgroup's `memory.max` when that is
    /// lower (a container or a systemd unit's `MemoryMax=`).
    public static func available() -> Int {
        let physical = Int(sysconf(Int32(_SC_PHYS_PAGES))) * Int(sysconf(Int32(_SC_PAGESIZE)))
        guard let cgroup = cgroupLimit(), cgroup > 0 else { return physical }
        return min(physical, cgroup)
    }

    /// The default memory limit: half of ``available()``, leaving the rest to the table states themselves, the
    /// store's caches and the system.
    public static func defaultLimit() -> Int { available() / 2 }

    /// cgroup v2's `memory.max` of this process' group (`max`: none), or v1's `memory.limit_in_bytes`.
    private static func cgroupLimit() -> Int? {
        guard let membership = read("/proc/self/cgroup") else { return nil }
        for line in membership.split(separator: "\n") where line.hasPrefix("0::") {
            let path = line.dropFirst(3)
            if let text = read("/sys/fs/cgroup\(path)/memory.max") ?? read("/sys/fs/cgroup/memory.max") {
                return Int(text.trimmingSpaces())
            }
        }
        return read("/sys/fs/cgroup/memory/memory.limit_in_bytes").flatMap { Int($0.trimmingSpaces()) }
    }

    private static func read(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces, tabs and line feeds.
    fileprivate func trimmingSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\n" || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
