import MemoryBudget
import WebSocketTransport
import XCTest

/// The memory budget over real sockets: outbound queues and inbound backlogs are counted in its accounts, the
/// biggest outbound holder is closed when the outbound account passes its share, and reading pauses while the
/// inbound account is past its share.
final class WebSocketServerMemoryBudgetTests: XCTestCase {
    private let kilobyte = WebSocketMessage(bytes: [UInt8](repeating: 0x2A, count: 1000))

    /// Polls `condition` for up to 10 s.
    private func wait(_ what: String, until condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                XCTFail("timed out waiting for \(what)")
                throw CancellationError()
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Queued messages count their payload and a fixed overhead per entry; one charged to another account (a
    /// shared snapshot) counts only the overhead, however many queues hold it. Everything is given back when the
    /// connection goes.
    func testQueuedBytesAreCountedOnceAndGivenBack() async throws {
        let budget = MemoryBudget(limit: 1 << 30)
        let events = EventRecorder()
        let server = try WebSocketServer(
            configuration: .init(host: "127.0.0.1", port: 0, maxQueuedBytes: 64 << 20, memoryBudget: budget),
            onEvent: events.handler)
        var stalled: RawSocket? = try RawSocket(port: server.port, receiveBuffer: 4096)
        _ = stalled?.upgrade()
        try await events.wait("open") { $0.opened.count == 1 }
        let id = try XCTUnwrap(events.opened.first?.id)
        XCTAssertIdentical(server.memoryBudget, budget)

        // 12 MB: more than the socket buffers take, so that most wait in the queue, which then holds as many
        // entries as `outboundBacklog` counts (below 64), each counted as its overhead only.
        let shared = WebSocketMessage(bytes: [UInt8](repeating: 1, count: 1_000_000))
        shared.charge(to: budget[.snapshots])
        for _ in 0..<12 { server.send(shared, to: id) }
        try await wait("the queued entries counted") {
            server.outboundBacklog > 0 && budget[.outbound].bytes == 64 * server.outboundBacklog
        }
        XCTAssertGreaterThanOrEqual(budget[.snapshots].bytes, 1_000_000, "counted once, in its own account")
        server.send(WebSocketMessage(bytes: [UInt8](repeating: 2, count: 1_000_000)), to: id)
        try await wait("an uncharged one with its payload") {
            budget[.outbound].bytes == 64 * server.outboundBacklog + 1_000_000
        }
        stalled = nil
        try await events.wait("closed") { !$0.closes().isEmpty }
        XCTAssertEqual(budget[.outbound].bytes, 0)
        XCTAssertEqual(budget[.outbound].degradations, 0)
        await server.shutdown()
    }

    /// Two readers stopped reading, one sent 3 MB, the other 20 MB (both more than socket buffers take), against an
    /// outbound share of 8.4 MB: the second, the biggest holder, is closed with 4000 once the account passes its
    /// share, its queue given back at once; the first and three live readers keep being served, and the account
    /// returns to zero.
    func testTheBiggestOutboundHolderIsClosedWith4000AndTheOthersAreServed() async throws {
        let budget = MemoryBudget(limit: 24_000_000)
        let serverEvents = EventRecorder()
        let server = try WebSocketServer(
            configuration: .init(
                host: "127.0.0.1", port: 0, maxQueuedBytes: 64 << 20, maxQueuedMessages: 100_000, memoryBudget: budget),
            onEvent: serverEvents.handler)
        let clientEvents = EventRecorder()
        let client = try WebSocketClient(onEvent: clientEvents.handler)
        let readers = (0..<3).map { _ in client.connect(WebSocketConnectRequest(host: "127.0.0.1", port: server.port)) }
        let small = try RawSocket(port: server.port, receiveBuffer: 4096)
        _ = small.upgrade(path: "/small")
        let big = try RawSocket(port: server.port, receiveBuffer: 4096)
        _ = big.upgrade(path: "/big")
        try await serverEvents.wait("5 opens") { $0.opened.count == 5 }
        let smallID = try XCTUnwrap(serverEvents.opened.first { $0.path == "/small" }?.id)
        let bigID = try XCTUnwrap(serverEvents.opened.first { $0.path == "/big" }?.id)
        let readerIDs = serverEvents.opened.filter { $0.path == "/" }.map(\.id)
        let account = budget[.outbound]

        // The small one holds at most half the share, so the big one holds more when the account passes it.
        for _ in 0..<3000 { server.send(kilobyte, to: smallID) }
        for index in 0..<20_000 {
            server.send(kilobyte, to: bigID)
            if index % 100 == 0 { server.send(kilobyte, to: readerIDs) }
        }
        XCTAssertEqual(big.readCloseFrame()?.code, 4000)
        try await serverEvents.wait("the big reader closed") { !$0.closes(on: bigID).isEmpty }
        XCTAssertEqual(
            serverEvents.closes(on: bigID).first,
            WebSocketCloseFrame(code: .slowConsumer, reason: "server memory for outbound queues exhausted"))
        XCTAssertEqual(account.degradations, 1)

        // The others are served: the live readers get everything, the small one all it was sent once it reads.
        try await clientEvents.wait("readers served") { events in
            readers.allSatisfy { events.messageCount(on: $0) == 200 }
        }
        for index in 0..<3000 {
            let frame = small.readFrame()
            XCTAssertEqual(frame?.payload.count, 1000, "message \(index)")
        }
        XCTAssertEqual(serverEvents.closes().count, 1)
        try await wait("the account back to zero") { account.bytes == 0 }
        await client.shutdown()
        await server.shutdown()
    }

    /// With an inbound share of 100 KB and nothing consumed, a sender of 200 messages of 8 KB is no longer read
    /// once the account passes its share (it waits in TCP); consumed, its backlog drains, reading resumes, all 200
    /// arrive in order, and the account returns to zero.
    func testReadingPausesWhileTheInboundAccountIsOverAndResumes() async throws {
        let budget = MemoryBudget(limit: 1_000_000)
        let events = EventRecorder()
        let server = try WebSocketServer(
            configuration: .init(host: "127.0.0.1", port: 0, maxUnconsumedMessages: 10_000, memoryBudget: budget),
            onEvent: events.handler)
        let client = try WebSocketClient(onEvent: { _ in })
        let id = client.connect(WebSocketConnectRequest(host: "127.0.0.1", port: server.port))
        let payload = String(repeating: "x", count: 8_000)
        for index in 0..<200 { client.send(WebSocketMessage(text: "\(index) \(payload)"), to: id) }
        let account = budget[.inbound]
        try await wait("the account over its share") { account.isOver }
        try await Task.sleep(for: .milliseconds(300))
        let whilePaused = events.messages().count
        XCTAssertLessThan(whilePaused, 20, "reading pauses near 100 KB, not after \(whilePaused) messages of 8 KB")
        XCTAssertGreaterThan(account.degradations, 0)

        let connection = try XCTUnwrap(events.opened.first?.id)
        var consumed = 0
        while consumed < 200 {
            let received = events.messages().count
            while consumed < received {
                server.consumed(connection)
                consumed += 1
            }
            if consumed < 200 { try await events.wait("more messages") { $0.messages().count > received } }
        }
        XCTAssertEqual(events.messages().map { $0.text.prefix { $0 != " " } }, (0..<200).map { Substring(String($0)) })
        try await wait("the account back to zero") { account.bytes == 0 }
        await client.shutdown()
        await server.shutdown()
    }

    /// A message being assembled counts too, and is given back when its connection goes.
    func testAPartlyAssembledMessageIsCountedUntilItsConnectionGoes() async throws {
        let budget = MemoryBudget(limit: 1 << 30)
        let events = EventRecorder()
        let server = try WebSocketServer(
            configuration: .init(host: "127.0.0.1", port: 0, maxUnconsumedMessages: 100, memoryBudget: budget),
            onEvent: events.handler)
        var socket: RawSocket? = try RawSocket(port: server.port)
        _ = socket?.upgrade()
        socket?.write(RawSocket.frame(opcode: 0x1, fin: false, payload: [UInt8](repeating: 0x61, count: 60_000)))
        try await wait("the first fragment counted") { budget[.inbound].bytes >= 60_000 }
        socket = nil
        try await events.wait("closed") { !$0.closes().isEmpty }
        XCTAssertEqual(budget[.inbound].bytes, 0)
        await server.shutdown()
    }
}
