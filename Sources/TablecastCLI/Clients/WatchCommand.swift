import ArgumentParser
import Foundation
import TableModel
import TablecastClient
import TablecastProtocol

/// `tablecast watch TABLE`: the snapshot and every update, as JSON lines or readable text.
struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch", abstract: "Print a table's snapshot and every update as JSON lines (or --pretty).",
        discussion: """
            Keeps watching across reconnects (resuming from the last version, so nothing is printed twice). \
            Exits 1 with the server's error when it refuses (no such table, forbidden, …) or drops the table.
            """)
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var selection: TableSelection
    @Flag(help: "Readable output instead of JSON lines.")
    var pretty = false
    @Option(help: "Exit after this many updates.")
    var updates: Int?

    func run() async throws {
        let transport = try connection.makeTransport()
        let client = try connection.makeClient(transport: transport)
        let events = client.events()
        let tlsWatch = exitOnTLSFailure(of: client, url: connection.url)
        defer { tlsWatch.cancel() }
        client.connect()
        let table = selection.name
        // The snapshot (or catch-up) is buffered in `events` meanwhile. Only the first subscribe has a deadline:
        // after it, watch keeps watching across reconnects.
        if case .failure(let error) = await connection.within(client, { try await client.subscribe(table) }) {
            await client.close()
            let timedOut = error is ConnectionOptions.Unreachable
            if !timedOut { await transport.shutdown() } // (see ConnectionOptions.makeTransport)
            let text = (error as? ProtocolError).map { ServerMessage.error($0).json.jsonText } ?? "\(error)"
            Output.error("tablecast watch: \(text)")
            throw ExitCode(timedOut ? 2 : 1)
        }
        var seen = 0
        var failure: String?
        // For --pretty: the table before each update (to show which fields a change set) and who is who.
        var previous: Table?
        var names: [String: String] = [:]
        loop: for await event in events {
            if let updates, seen >= updates { break }
            switch event {
            case .snapshot(let replica):
                previous = replica.table
                Output.line(pretty ? Self.pretty(replica) : Self.snapshotJSON(replica).jsonText)
            case .update(let update, let replica):
                let line =
                    pretty
                    ? Self.pretty(update, before: previous, names: names) : ServerMessage.update(update).json.jsonText
                previous = replica.table
                Output.line(line)
                seen += 1
                if let updates, seen >= updates { break loop }
            case .dropped(let name) where name == table:
                failure = "table '\(table)' was dropped"
                break loop
            case .subscriptionEnded(let name, let reason) where name == table:
                failure = reason
                break loop
            case .state(let state):
                // On stderr in both forms: stdout stays the table's JSON lines.
                guard case .reconnecting = state, let problem = client.connectionProblem else {
                    Output.error("[\(state)]")
                    break
                }
                Output.error("[\(state): \(await ReconnectReason.text(problem, url: connection.url))]")
            case .rules(_, let rules) where pretty:
                Output.line("rules: \(rules.json.jsonText)")
            case .rules(let name, let rules):
                Output.line(ServerMessage.rules(table: name, rules: rules).json.jsonText)
            case .presence(_, let presence) where pretty:
                for entry in presence.clients { names[entry.client] = entry.name }
                Output.line("here: " + Self.pretty(presence))
            default:
                break
            }
        }
        await client.close()
        await transport.shutdown()
        if let failure {
            Output.error("tablecast watch: \(failure)")
            throw ExitCode(1)
        }
    }

    /// `alice (editing) on r3, bob and 2 watching`, `2 watching`, or `nobody`.
    static func pretty(_ presence: PresenceState) -> String {
        var parts = presence.clients.map { entry in
            "\(entry.name)\(entry.editing ? " (editing)" : "")\(entry.row.map { " on \($0)" } ?? "")"
        }
        if presence.viewers > 0 { parts.append("\(presence.viewers) watching") }
        switch parts.count {
        case 0: return "nobody"
        case 1: return parts[0]
        default: return parts.dropLast().joined(separator: ", ") + " and " + parts.last!
        }
    }

    static func snapshotJSON(_ replica: Replica) -> JSONValue {
        ServerMessage.snapshot(
            table: replica.name, version: replica.version, epoch: replica.epoch, rules: replica.table.rules,
            sections: replica.table.sections
        ).json
    }

    static func pretty(_ replica: Replica) -> String {
        var lines = ["\(replica.name) at version \(replica.version) (epoch \(replica.epoch))"]
        for (s, section) in replica.table.sections.enumerated() {
            lines.append("  section \(s) [\(section.id)]\(section.header.map { " \($0)" } ?? "")")
            for (r, row) in section.rows.enumerated() {
                let flags = (row.editable ? "" : " (not editable)") + (row.movable ? "" : " (not movable)")
                lines.append("    \(r). \(row.value.jsonText)  [\(row.id)]\(flags)")
            }
            if let footer = section.footer { lines.append("  \(footer)") }
        }
        return lines.joined(separator: "\n")
    }

    /// `v9 by Ana: [0,0] "Yogurt": done → true`: the changes of `update`, with the rows it reloads compared with
    /// the table `before` it, and its origin by the name presence showed for it (else its client id and ref).
    static func pretty(_ update: ServerMessage.Update, before: Table?, names: [String: String]) -> String {
        let batch = update.batch
        var parts: [String] = []
        parts += batch.deleteSections.map { "delete section \($0)" }
        parts += batch.insertSections.map {
            "insert section \($0.at)\($0.section.header.map { " \($0)" } ?? "") with \($0.section.rows.count) rows"
        }
        parts += batch.reloadSections.map {
            "section \($0.at) header \($0.header ?? "none") footer \($0.footer ?? "none")"
        }
        parts += batch.moveSections.map { "move section \($0.from) → \($0.to)" }
        parts += batch.deleteRows.map { "delete \($0)" }
        parts += batch.insertRows.map { "insert \($0.at) \($0.row.value.jsonText) [\($0.row.id)]" }
        parts += batch.reloadRows.map { ValueChange.text(at: $0.at, from: before?.row(at: $0.at)?.value, to: $0.value) }
        parts += batch.moveRows.map { "move \($0.from) → \($0.to)" }
        let origin = names[update.originClient] ?? update.originClient + (update.originRef.map { "/\($0)" } ?? "")
        return "v\(update.version) by \(origin): " + parts.joined(separator: "; ")
    }
}
