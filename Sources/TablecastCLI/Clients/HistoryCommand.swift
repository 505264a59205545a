import ArgumentParser
import Foundation
import TableModel
import TablecastClient
import TablecastProtocol

/// `tablecast history TABLE`: who changed what and when, one line per committed version.
struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Print a table's changes, one JSON line per committed version, oldest first (or --pretty).",
        discussion: """
            Each line is a `changes` entry: {version, time (ms since 1970), origin {client, name, ref}, and the \
            update's eight lists}. --from/--to bound the versions (inclusive); --limit N prints the last N of them. \
            Asking for a version the server no longer keeps exits 1 with a `pruned` error naming the oldest kept.
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var selection: TableSelection
    @Option(help: "The first version to print (default: the oldest kept).")
    var from: UInt64?
    @Option(help: "The last version to print (default: the latest).")
    var to: UInt64?
    @Option(help: "Print only the last N changes of the range.")
    var limit: Int?
    @Flag(help: #"Readable lines: v8 by alice at 14:02: delete [0,1] "milk"."#)
    var pretty = false

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
        if let from, let to, from > to { throw ValidationError("--from (\(from)) is after --to (\(to))") }
    }

    func run() async throws {
        let (table, from, to, limit, pretty) = (selection.name, from, to, limit, pretty)
        let (entries, before) = try await connection.withClient { client in
            let entries = try await Self.entries(of: table, from: from, to: to, limit: limit, client)
            // Deleted and moved rows are named by value: the table before the first change says which they were.
            let before = try await entries.first.flatMap { pretty ? $0.version - 1 : nil }.asyncMap {
                try await client.table(table, atVersion: $0)
            }
            return (entries, before)
        }
        var printer = HistoryPrinter(replica: before)
        for entry in entries {
            Output.line(pretty ? printer.line(for: entry) : entry.json.jsonText)
        }
    }

    /// The entries in `from...to`, oldest first: all of them, or the last `limit`, page by page.
    static func entries(
        of table: String, from: UInt64?, to: UInt64?, limit: Int?, _ client: TablecastClient
    ) async throws -> [ServerMessage.HistoryEntry] {
        let pageSize = 1000
        var entries: [ServerMessage.HistoryEntry] = []
        if let limit {
            var to = to
            while entries.count < limit {
                let page = try await client.history(
                    table, from: from, to: to, limit: min(pageSize, limit - entries.count), newestFirst: true)
                entries += page.entries
                guard let next = page.next else { break }
                to = next
            }
            return entries.reversed()
        }
        var from = from
        while true {
            let page = try await client.history(table, from: from, to: to, limit: pageSize, newestFirst: false)
            entries += page.entries
            guard let next = page.next else { return entries }
            from = next
        }
    }
}

/// Writes history entries as readable lines, following the table from the version before the first one so that
/// deleted, edited and moved rows are named by their values.
struct HistoryPrinter {
    /// The table before the next entry; nil when unknown (then rows are named by index path only).
    var replica: Replica?

    /// `v8 by alice at 14:02: delete [0,1] "milk"`, and the table advanced past it.
    mutating func line(for entry: ServerMessage.HistoryEntry) -> String {
        let (batch, before) = (entry.batch, replica?.table)
        let value = { (path: RowPath) in before?.row(at: path).map { " \($0.value.jsonText)" } ?? "" }
        let header = { (index: Int) -> String in
            guard let table = before, table.sections.indices.contains(index) else { return "" }
            return table.sections[index].header.map { " \(JSONValue.string($0).jsonText)" } ?? ""
        }
        var parts: [String] = []
        parts += batch.deleteSections.map { "delete section \($0)\(header($0))" }
        parts += batch.insertSections.map {
            "insert section \($0.at)\($0.section.header.map { " \(JSONValue.string($0).jsonText)" } ?? "") with \($0.section.rows.count) rows"
        }
        parts += batch.reloadSections.map {
            "section \($0.at) header \($0.header.map { JSONValue.string($0).jsonText } ?? "none")"
                + " footer \($0.footer.map { JSONValue.string($0).jsonText } ?? "none")"
        }
        parts += batch.moveSections.map { "move section \($0.from)\(header($0.from)) → \($0.to)" }
        parts += batch.deleteRows.map { "delete \($0)\(value($0))" }
        parts += batch.insertRows.map { "insert \($0.at) \($0.row.value.jsonText)" }
        parts += batch.reloadRows.map { ValueChange.text(at: $0.at, from: before?.row(at: $0.at)?.value, to: $0.value) }
        parts += batch.moveRows.map { "move \($0.from) → \($0.to)\(value($0.from))" }
        let update = ServerMessage.Update(
            table: replica?.name ?? "", version: entry.version, originClient: entry.originClient,
            originRef: entry.originRef, batch: batch)
        if replica != nil, (try? replica!.apply(update)) == nil { replica = nil }
        let who = entry.originName ?? entry.originClient
        return "v\(entry.version) by \(who) at \(Self.time(entry.time)): " + parts.joined(separator: "; ")
    }

    /// `14:02` for today, `2026-11-20 14:02` before, in local time.
    static func time(_ milliseconds: Int64) -> String {
        let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = Calendar.current.isDateInToday(date) ? "HH:mm" : "yyyy-MM-dd HH:mm"
        return formatter.string(from: date)
    }
}

extension Optional {
    /// `map` with an async transform.
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
