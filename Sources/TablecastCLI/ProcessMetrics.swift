import Foundation

/// The standard `process_*` series (as Prometheus' own clients name them) and `tablecast_build_info`, read from
/// /proc when `/metrics` is asked: swift-metrics has no collector that runs at scrape time.
enum ProcessMetrics {
    /// Prometheus text for this process, ending with a line feed.
    static func exposition() -> [UInt8] {
        var text = """
            # HELP tablecast_build_info The running executable's version (value always 1).
            # TYPE tablecast_build_info gauge
            tablecast_build_info{version="\(TablecastVersion.current)"} 1

            """
        func gauge(_ name: String, _ help: String, _ value: Double?, type: String = "gauge") {
            guard let value else { return }
            let number = value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(number)\n"
        }
        let stat = Self.stat(of: "self")
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        gauge(
            "process_cpu_seconds_total", "User and system CPU time spent in seconds.",
            stat.map { Double($0.userTicks + $0.systemTicks) / ticks }, type: "counter")
        gauge(
            "process_resident_memory_bytes", "Resident memory size in bytes.",
            ProcessMemory.residentBytes(of: getpid()).map(Double.init))
        gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", stat.map { Double($0.virtualBytes) })
        gauge(
            "process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
            stat.flatMap { stat in bootTime().map { $0 + Double(stat.startTicks) / ticks } })
        gauge(
            "process_open_fds", "Number of open file descriptors.",
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")).map { Double($0.count) })
        var limit = rlimit()
        gauge(
            "process_max_fds", "Maximum number of open file descriptors.",
            getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 ? Double(limit.rlim_cur) : nil)
        return Array(text.utf8)
    }

    private struct Stat {
        var userTicks: Int
        var systemTicks: Int
        var startTicks: Int
        var virtualBytes: Int
    }

    /// The user and system CPU time process `pid` (on this machine) has used so far, in seconds; nil if it cannot
    /// be read.
    static func cpuSeconds(of pid: Int32) -> Double? {
        Self.stat(of: String(pid)).map { Double($0.userTicks + $0.systemTicks) / Double(sysconf(Int32(_SC_CLK_TCK))) }
    }

    /// /proc/PROCESS/stat's fields after the command name (which may hold spaces, hence the last parenthesis).
    private static func stat(of process: String) -> Stat? {
        guard let text = try? String(contentsOfFile: "/proc/\(process)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // Fields from the state (field 3); utime is field 14, stime 15, starttime 22, vsize 23.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 20, let user = Int(fields[11]), let system = Int(fields[12]), let start = Int(fields[19]),
            let virtual = Int(fields[20])
        else { return nil }
        return Stat(userTicks: user, systemTicks: system, startTicks: start, virtualBytes: virtual)
    }

    /// When the machine booted, in seconds since the epoch (`btime` in /proc/stat).
    private static func bootTime() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("btime ") })
        else { return nil }
        return Double(line.dropFirst(6))
    }
}
