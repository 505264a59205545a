import Foundation
import WebSocketTransport
import XCTest

@testable import TablecastServer

/// The router's mailbox: every event, in order, waiting when there is none, and the end after what was queued.
final class RouterEventsTests: XCTestCase {
    private func tick(_ events: RouterEvents) -> Bool { events.yield(.tick) }

    private static func closed(_ id: UInt64) -> RouterEvent {
        .transport(.closed(WebSocketConnectionID(rawValue: id), WebSocketCloseFrame(code: .normalClosure, reason: "")))
    }

    private func ids(_ batch: [RouterEvent]) -> [UInt64] {
        batch.compactMap { event in
            if case .transport(.closed(let id, _)) = event { id.rawValue } else { nil }
        }
    }

    func testQueuedEventsComeInOrderAsOneBatch() async {
        let events = RouterEvents()
        for id in 1...5 { events.yield(Self.closed(UInt64(id))) }
        let batch = await events.next()
        XCTAssertEqual(batch.map(ids), [1, 2, 3, 4, 5])
    }

    func testNextWaitsForAnEventFromAnotherThread() async {
        let events = RouterEvents()
        let yielded = Date()
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.2)
            events.yield(Self.closed(7))
        }
        let batch = await events.next()
        XCTAssertEqual(batch.map(ids), [7])
        XCTAssertGreaterThan(Date().timeIntervalSince(yielded), 0.15, "next() returned before the event came")
    }

    func testFinishDeliversWhatWasQueuedThenEnds() async {
        let events = RouterEvents()
        events.yield(Self.closed(1))
        events.finish()
        XCTAssertFalse(tick(events), "an event after finish is refused")
        let first = await events.next()
        XCTAssertEqual(first.map(ids), [1])
        let end = await events.next()
        XCTAssertNil(end)
    }

    func testFinishWakesAWaitingRouter() async {
        let events = RouterEvents()
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.1)
            events.finish()
        }
        let end = await events.next()
        XCTAssertNil(end)
    }

    func testEventsFromManyThreadsAllArriveEachInItsOwnOrder() async {
        let events = RouterEvents()
        let threads = 4
        let perThread = 20_000
        for thread in 0..<threads {
            Thread.detachNewThread {
                for index in 0..<perThread { events.yield(Self.closed(UInt64(thread * perThread + index))) }
            }
        }
        var next = Array(repeating: 0, count: threads)
        var received = 0
        while received < threads * perThread, let batch = await events.next() {
            for id in ids(batch) {
                let thread = Int(id) / perThread
                XCTAssertEqual(Int(id) % perThread, next[thread], "thread \(thread)'s events out of order")
                next[thread] = Int(id) % perThread + 1
                received += 1
            }
        }
        XCTAssertEqual(next, Array(repeating: perThread, count: threads))
    }
}
