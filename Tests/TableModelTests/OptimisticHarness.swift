import TableModel

/// A server engine and clients holding ``OptimisticTable``s, with the messages between them held in queues so
/// that a test decides when each one is delivered: requests reach the server in any order across clients,
/// and each client gets its messages in order (one socket), its own update before its ack, as on the wire.
struct OptimisticHarness {
    enum Message {
        case update(Batch, origin: Int)
        case ack(created: [String])
        case error(TableError)
    }

    var server: TableEngine
    var clients: [OptimisticTable]
    /// Requests not yet processed by the server, per client (at most one each: one intent in flight).
    var requests: [[OptimisticTable.Outgoing]]
    var inboxes: [[Message]]
    /// Everything the clients were told was refused, per client.
    var refusals: [[OptimisticTable.Refusal]]
    var accepted: [[Int]]

    init(table: Table, clients count: Int) {
        server = TableEngine(table: table)
        clients = Array(repeating: OptimisticTable(confirmed: TableEngine(table: table)), count: count)
        requests = Array(repeating: [], count: count)
        inboxes = Array(repeating: [], count: count)
        refusals = Array(repeating: [], count: count)
        accepted = Array(repeating: [], count: count)
    }

    /// Client `client` submits `intent` made against its predicted table.
    @discardableResult
    mutating func submit(_ client: Int, _ intent: Intent) throws(TableError) -> OptimisticTable.Submission {
        let submission = try clients[client].submit(intent)
        if let send = submission.send { requests[client].append(send) }
        if submission.settled { accepted[client].append(submission.id) }
        return submission
    }

    mutating func undo(_ client: Int) throws(TableError) -> OptimisticTable.Submission? {
        let submission = try clients[client].undo()
        if let send = submission?.send { requests[client].append(send) }
        return submission
    }

    mutating func redo(_ client: Int) throws(TableError) -> OptimisticTable.Submission? {
        let submission = try clients[client].redo()
        if let send = submission?.send { requests[client].append(send) }
        return submission
    }

    /// The server takes `client`'s request and answers it as the real one does: the update to every client
    /// (the sender's first), then the ack; or an error.
    mutating func serve(_ client: Int) {
        let request = requests[client].removeFirst()
        do {
            let resolution = try server.resolve(request.intent, base: request.base)
            try server.commit(resolution)
            if !resolution.isNoop {
                for index in inboxes.indices { inboxes[index].append(.update(resolution.batch, origin: client)) }
            }
            inboxes[client].append(.ack(created: resolution.createdIDs))
        } catch {
            inboxes[client].append(.error(error))
        }
    }

    /// Delivers `client`'s next message.
    mutating func deliver(_ client: Int) throws {
        let message = inboxes[client].removeFirst()
        let outcome: OptimisticTable.Outcome
        switch message {
        case .update(let batch, let origin):
            try clients[client].receive(batch, own: origin == client)
            return
        case .ack(let created): outcome = clients[client].acknowledge(created: created)
        case .error(let error): outcome = clients[client].refuse(error)
        }
        if let send = outcome.send { requests[client].append(send) }
        refusals[client] += outcome.refused
        accepted[client] += outcome.accepted
    }

    /// One step of a random client: an intent against its prediction (4 in 10), an undo, a redo, the server taking
    /// its next request (2 in 10) or its next message delivered (2 in 10), if it has one.
    mutating func randomStep(using generator: inout some RandomNumberGenerator) throws {
        let client = Int.random(in: clients.indices, using: &generator)
        switch Int.random(in: 0..<10, using: &generator) {
        case 0..<4:
            let intent = RandomTables.clientIntent(for: clients[client].predicted, using: &generator)
            _ = try? submit(client, intent)
        case 4: _ = try? undo(client)
        case 5: _ = try? redo(client)
        case 6, 7: if !requests[client].isEmpty { serve(client) }
        default: if !inboxes[client].isEmpty { try deliver(client) }
        }
    }

    var isQuiet: Bool { requests.allSatisfy(\.isEmpty) && inboxes.allSatisfy(\.isEmpty) }

    /// Serves and delivers everything, in a fixed order.
    mutating func settle() throws {
        while !isQuiet {
            for client in clients.indices {
                while !requests[client].isEmpty { serve(client) }
            }
            for client in clients.indices {
                while !inboxes[client].isEmpty { try deliver(client) }
            }
        }
    }
}

/// A table without ids: what a person sees.
struct Content: Equatable, CustomStringConvertible {
    var sections: [SectionContent]

    init(_ table: Table) {
        sections = table.sections.map { section in
            SectionContent(
                header: section.header, footer: section.footer,
                rows: section.rows.map {
                    RowContent(
                        value: $0.value, editable: $0.editable, movable: $0.movable, editingStyle: $0.editingStyle)
                })
        }
    }

    var description: String {
        sections.map { section in
            "[\(section.header ?? "-")| " + section.rows.map { "\($0.value)" }.joined(separator: " ") + "]"
        }.joined(separator: " ")
    }
}

extension Table {
    /// The values of section `section`'s rows, for compact assertions.
    func values(_ section: Int) -> [JSONValue] { sections[section].rows.map(\.value) }
}
