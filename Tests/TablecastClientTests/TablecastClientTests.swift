import TableModel
import TablecastClient
import TablecastProtocol
import TablecastServer
import XCTest

final class TablecastClientTests: XCTestCase {
    /// A random intent against what `replica` shows: inserts, deletes, moves, edits and small batches, with ids.
    private static func randomIntent(_ replica: Replica, _ tag: String, using random: inout some RandomNumberGenerator)
        -> Intent
    {
        let sections = replica.table.sections
        let rows = sections.enumerated().flatMap { s, section in
            section.rows.indices.map { (RowPath(section: s, row: $0), section.rows[$0].id) }
        }
        func insertionPoint() -> RowPath {
            let s = Int.random(in: 0..<sections.count, using: &random)
            return RowPath(section: s, row: Int.random(in: 0...sections[s].rows.count, using: &random))
        }
        let choice = rows.isEmpty ? 0 : Int.random(in: 0..<11, using: &random)
        switch choice {
        case 0...2:
            return .insert(at: insertionPoint(), row: RowContent(value: .string(tag)))
        case 3...4:
            let (path, id) = rows.randomElement(using: &random)!
            return .delete(RowRef(path, id: id))
        case 5...6:
            let (path, id) = rows.randomElement(using: &random)!
            var to = insertionPoint()
            if to.section == path.section { to.row = min(to.row, sections[to.section].rows.count - 1) }
            return .move(from: RowRef(path, id: id), to: to)
        case 7...8:
            let (path, id) = rows.randomElement(using: &random)!
            return .edit(RowRef(path, id: id), value: .string(tag))
        case 9:
            let s = Int.random(in: 0..<sections.count, using: &random)
            let replacement = (0..<Int.random(in: 0...3, using: &random)).map {
                RowContent(value: .string("\(tag)-\($0)"))
            }
            return .editSection(SectionRef(s, id: sections[s].id), rows: replacement)
        default:
            let (path, id) = rows.randomElement(using: &random)!
            return .batch(
                ClientBatch(
                    deleteRows: [RowRef(path, id: id)],
                    insertRows: [.init(at: RowPath(section: 0, row: 0), row: RowContent(value: .string(tag)))]))
        }
    }

    func testReplicasEqualTheServerAfterRandomConcurrentEdits() async throws {
        let server = try await TestServer()
        let admin = try TablecastClient(configuration: .init(url: server.url))
        admin.connect()
        try await admin.createTable(
            "shared",
            sections: [
                SectionContent(header: "A", rows: (0..<5).map { RowContent(value: .number(Double($0))) }),
                SectionContent(header: "B", rows: (0..<5).map { RowContent(value: .number(Double($0))) }),
            ])
        // The welcome named the server's software and version.
        XCTAssertEqual(admin.server?.name, "tablecast")
        XCTAssertEqual(admin.server?.version, TableServer.version)
        // Two of them handle what arrives right on the transport's thread (as `tablecast load`'s subscribers do),
        // sharing one transport.
        let transport = try TablecastTransport()
        let clients = try (0..<4).map { i in
            var configuration = TablecastClient.Configuration(
                url: server.url, clientID: "editor-\(i)", name: "Editor \(i)")
            configuration.handlesOnTransportThread = i % 2 == 1
            return try TablecastClient(configuration: configuration, transport: i % 2 == 1 ? transport : nil)
        }
        for client in clients { client.connect() }
        for client in clients { try await client.subscribe("shared") }

        let refusals = try await withThrowingTaskGroup(of: Int.self) { group in
            for (i, client) in clients.enumerated() {
                group.addTask {
                    var random = SystemRandomNumberGenerator()
                    var refused = 0
                    for n in 0..<60 {
                        let intent = Self.randomIntent(client.replica(of: "shared")!, "c\(i)-\(n)", using: &random)
                        do {
                            // Mostly pipelined at the replica's (often stale) version; every fifth waits for the ack.
                            if n % 5 == 0 {
                                try await client.send(intent, to: "shared")
                            } else {
                                Task { _ = try? await client.send(intent, to: "shared") }
                            }
                        } catch is ProtocolError {
                            refused += 1
                        }
                    }
                    return refused
                }
            }
            return try await group.reduce(0, +)
        }
        try await eventually("every request answered") { clients.allSatisfy { $0.pendingRequestCount == 0 } }
        let truth = try await server.snapshot("shared")
        XCTAssertGreaterThan(truth.version, 100, "most intents commit (\(refusals) refused)")
        try await eventually("replicas reach the server's version") {
            clients.allSatisfy { $0.replica(of: "shared")?.version == truth.version }
        }
        for client in clients {
            XCTAssertTrue(
                client.replica(of: "shared")!.hasSameContents(as: truth), "replica of \(client.configuration.clientID)")
        }
        for client in clients { await client.close() }
        await transport.shutdown()
        await admin.close()
        await server.tearDown()
    }

    /// A table whose snapshot is larger than the server's outbound queue bound (here 256 KiB) and than the
    /// WebSocket layer's 1 MiB message default reaches a new subscriber, as one snapshot, without a close.
    func testASnapshotLargerThanTheQueueBoundAndOneMiBArrives() async throws {
        let server = try await TestServer(maxQueuedBytes: 256 << 10)
        let writer = try TablecastClient(configuration: .init(url: server.url, clientID: "big-writer"))
        writer.connect()
        try await writer.createTable("big", sections: [SectionContent()])
        let value = JSONValue.string(String(repeating: "x", count: 60_000))
        for row in 0..<25 {
            try await writer.insert("big", at: RowPath(section: 0, row: row), value: value, base: .current)
        }
        let replica = try await server.snapshot("big")
        XCTAssertEqual(replica.table.sections[0].rows.count, 25, "a snapshot of about 1.5 MB")
        let overflows = try await server.metric("websocket_queue_overflows_total")
        XCTAssertEqual(overflows, 0, "no slow-reader close")
        await writer.close()
        await server.tearDown()
    }

    /// Intents in flight when the connection drops are re-sent with their refs after the reconnect: every one is
    /// applied exactly once, and the replica resumes from its version to equal the server's table.
    func testReconnectResendsInFlightIntentsExactlyOnce() async throws {
        let server = try await TestServer()
        let client = try TablecastClient(
            configuration: .init(
                url: server.url, clientID: "flaky",
                backoff: Backoff(initial: .milliseconds(20), maximum: .milliseconds(200))))
        let states = client.events()
        client.connect()
        try await client.createTable("log", sections: [SectionContent()])
        try await client.subscribe("log")
        let count = 200
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<count {
                group.addTask {
                    try await client.insert(
                        "log", at: RowPath(section: 0, row: 0), value: .number(Double(i)), base: .current)
                }
                if i == 70 || i == 140 {
                    // Dropped while under way: more than i - 70 inserts committed (a version each), the others in
                    // flight or not sent yet.
                    try await eventually("inserts committed") { client.replica(of: "log")!.version > UInt64(i - 70) }
                    client.dropConnection()
                    try await eventually { client.connectionState != .live }
                    try await eventually { client.connectionState == .live }
                }
            }
            try await group.waitForAll()
        }
        let truth = try await server.snapshot("log")
        let values = truth.table.sections[0].rows.map(\.value)
        XCTAssertEqual(values.count, count, "nothing lost, nothing applied twice")
        XCTAssertEqual(Set(values).count, count)
        XCTAssertEqual(truth.version, UInt64(1 + count) - 1, "one version per insert")
        // Retries were answered from the stored acks, never committed again (which fails the whole group).
        let unavailable = try await server.metric(#"tablecast_intents_total{outcome="unavailable"}"#)
        XCTAssertEqual(unavailable, 0)
        try await eventually { client.replica(of: "log")?.version == truth.version }
        XCTAssertTrue(client.replica(of: "log")!.hasSameContents(as: truth))
        await client.close()
        var seen: [ConnectionState] = []
        for await event in states { if case .state(let state) = event { seen.append(state) } }
        XCTAssertTrue(seen.contains { if case .reconnecting = $0 { true } else { false } }, "\(seen)")
        XCTAssertEqual(seen.filter { $0 == .live }.count, 3, "\(seen)")
        await server.tearDown()
    }

    /// The server restarts on the same port and database while intents are in flight: the client reconnects,
    /// resumes and gets every ack; the server's deduplication (refs stored with the commits) holds across the
    /// restart.
    func testServerRestartWithIntentsInFlight() async throws {
        let server = try await TestServer()
        let client = try TablecastClient(
            configuration: .init(
                url: server.url, clientID: "survivor",
                backoff: Backoff(initial: .milliseconds(20), maximum: .milliseconds(200))))
        let events = client.events()
        client.connect()
        try await client.createTable("t", sections: [SectionContent(rows: [RowContent(value: "first")])])
        try await client.subscribe("t")
        let count = 100
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<count {
                group.addTask {
                    try await client.insert(
                        "t", at: RowPath(section: 0, row: 1), value: .number(Double(i)), base: .current)
                }
            }
            // Stopped while under way: some inserts committed (a version each), others in flight.
            try await eventually("an insert committed") { client.replica(of: "t")!.version > 0 }
            await server.stop()
            try await server.start()
            try await group.waitForAll()
        }
        let truth = try await server.snapshot("t")
        XCTAssertEqual(truth.table.sections[0].rows.count, count + 1)
        XCTAssertEqual(Set(truth.table.sections[0].rows.map(\.value)).count, count + 1)
        try await eventually { client.replica(of: "t")?.version == truth.version }
        XCTAssertTrue(client.replica(of: "t")!.hasSameContents(as: truth))
        await client.close()
        var reconnected = false
        for await event in events { if case .state(.reconnecting) = event { reconnected = true } }
        XCTAssertTrue(reconnected)
        await server.tearDown()
    }

    func testRefusalsThrowProtocolErrorsAndPresenceArrives() async throws {
        let server = try await TestServer()
        let a = try TablecastClient(configuration: .init(url: server.url, clientID: "a", name: "Ana"))
        let b = try TablecastClient(configuration: .init(url: server.url, clientID: "b", name: "Bo"))
        let events = b.events()
        a.connect()
        b.connect()
        do {
            try await a.subscribe("missing")
            XCTFail("subscribed to a missing table")
        } catch let error as ProtocolError {
            XCTAssertEqual(error.code, .noSuchTable)
        }
        try await a.createTable("p", sections: [SectionContent(rows: [RowContent(value: 1)])])
        do {
            try await a.delete("p", at: RowPath(section: 0, row: 5), base: .current)
            XCTFail("deleted a missing row")
        } catch let error as ProtocolError {
            XCTAssertEqual(error.code, .outOfRange)
        }
        try await b.subscribe("p")
        try await a.subscribe("p")
        a.beginEditingRow("p", row: a.replica(of: "p")!.table.sections[0].rows[0].id)
        for await event in events {
            if case .presence(_, let presence) = event,
                presence.clients.contains(where: { $0.client == "a" && $0.row != nil })
            {
                break
            }
        }
        let refreshed = try await b.refresh("p")
        XCTAssertEqual(refreshed.version, a.replica(of: "p")!.version)
        let tables = try await a.listTables()
        XCTAssertEqual(tables.map(\.table), ["p"])
        try await a.dropTable("p")
        try await eventually { b.replica(of: "p") == nil }
        await a.close()
        await b.close()
        await server.tearDown()
    }

    /// A row's editing style reaches every replica (in the snapshot and in updates), and the server's refusals
    /// of what it forbids arrive as protocol errors with their code.
    func testEditingStyleIsReplicatedAndEnforced() async throws {
        let server = try await TestServer()
        let a = try TablecastClient(configuration: .init(url: server.url, clientID: "a", name: "Ana"))
        let b = try TablecastClient(configuration: .init(url: server.url, clientID: "b", name: "Bo"))
        a.connect()
        b.connect()
        try await a.createTable(
            "e",
            sections: [SectionContent(rows: [RowContent(value: "Add", editingStyle: .insert), RowContent(value: 1)])])
        try await a.subscribe("e")
        try await b.subscribe("e")
        XCTAssertEqual(b.replica(of: "e")!.table.sections[0].rows.map(\.editingStyle), [.insert, .delete])
        do {
            try await a.delete("e", at: RowPath(section: 0, row: 0))
            XCTFail("deleted the add-item placeholder")
        } catch let error as ProtocolError {
            XCTAssertEqual(error.code, .notEditable)
        }
        try await a.insert("e", at: RowPath(section: 0, row: 2), value: 2, editingStyle: .none)
        try await a.send(.edit(RowRef(RowPath(section: 0, row: 0)), value: "Add", editingStyle: .delete), to: "e")
        try await eventually { b.replica(of: "e")!.version == 2 }
        XCTAssertEqual(b.replica(of: "e")!.table.sections[0].rows.map(\.editingStyle), [.delete, .delete, .none])
        XCTAssertEqual(b.replica(of: "e")!.table, a.replica(of: "e")!.table)
        await a.close()
        await b.close()
        await server.tearDown()
    }

    func testPresenceFollowsDeltasAndNamelessClientsOnlyCount() async throws {
        let server = try await TestServer()
        let ana = try TablecastClient(configuration: .init(url: server.url, clientID: "ana", name: "Ana"))
        let watcher = try TablecastClient(configuration: .init(url: server.url, clientID: "watcher"))
        ana.connect()
        watcher.connect()
        try await ana.createTable("p", sections: [SectionContent(rows: [RowContent(value: 1)])])
        try await ana.subscribe("p")
        try await watcher.subscribe("p")
        try await eventually { ana.presence(of: "p")?.viewers == 1 && ana.presence(of: "p")?.clients.count == 1 }
        let me = try XCTUnwrap(ana.presence(of: "p"))
        XCTAssertEqual(me.clients.map(\.key), [me.you], "Ana is listed under her own key")
        XCTAssertEqual(me.others, [])
        // The nameless watcher is not listed; it counts itself among the viewers once its own arrival is published.
        try await eventually {
            watcher.presence(of: "p")?.clients.map(\.name) == ["Ana"] && watcher.presence(of: "p")?.viewers == 1
        }
        let row = try XCTUnwrap(ana.replica(of: "p")?.table.sections[0].rows[0].id)
        ana.beginEditingRow("p", row: row)
        try await eventually { watcher.presence(of: "p")?.clients.first?.row == row }
        await ana.close()
        try await eventually { watcher.presence(of: "p")?.clients == [] }
        await watcher.close()
        await server.tearDown()
    }

    /// A server that is not there: requests wait (the client keeps reconnecting), the connection's problem is
    /// known, and cancelling the waiting task ends the wait at once instead of never.
    func testCancellingARequestEndsItsWaitAndTheConnectionProblemIsKnown() async throws {
        let server = try await TestServer()
        let url = server.url
        await server.tearDown() // the port now refuses connections
        let client = try TablecastClient(configuration: .init(url: url))
        client.connect()
        let waiting = Task { try await client.listTables() }
        try await eventually { client.pendingRequestCount == 1 && client.connectionProblem != nil }
        waiting.cancel()
        do {
            _ = try await waiting.value
            XCTFail("answered without a server")
        } catch is CancellationError {}
        XCTAssertEqual(client.pendingRequestCount, 0)
        // A subscribe ends the same way.
        let subscribing = Task { try await client.subscribe("t") }
        try await eventually { client.pendingRequestCount == 1 }
        subscribing.cancel()
        await XCTAssertThrowsErrorAsync(try await subscribing.value)
        XCTAssertEqual(client.pendingRequestCount, 0)
        await client.close()
    }
}

/// `XCTAssertThrowsError` for async expressions.
func XCTAssertThrowsErrorAsync<T>(
    _ expression: @autoclosure () async throws -> T, file: StaticString = #filePath, line: UInt = #line
) async {
    do {
        _ = try await expression()
        XCTFail("no error thrown", file: file, line: line)
    } catch {}
}
