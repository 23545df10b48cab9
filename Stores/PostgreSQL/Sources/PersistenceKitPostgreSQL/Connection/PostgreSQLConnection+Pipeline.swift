import CLibPQ
import Foundation

/// One statement of a pipeline: its SQL, its parameters, whether it is prepared once per
/// connection (statements run often) and whether its values come back in binary form.
struct SQLStatement {
    var sql: String
    var parameters: [SQLParameter] = []
    var prepare = true
    var binary = false
}

/// A pipeline that failed: the statement that failed first (its position in the list) and
/// why. The statements before it ran; the ones after it did not.
struct PipelineFailure: Error {
    var index: Int
    var error: PostgreSQLStoreError
}

extension PostgreSQLConnection {
    /// Runs `statements` in one round trip (libpq's pipeline mode) and returns their results
    /// in order. A statement run for the first time on this connection is prepared in the
    /// same round trip.
    ///
    /// `flushAfter` (a count of statements) asks the server to send the results of the
    /// statements before it at once, rather than with the rest: a caller that must know
    /// whether those ran (a transaction's `BEGIN`) learns it even if a later statement
    /// waits on a lock and the connection dies meanwhile.
    ///
    /// As in one transaction's statements sent one by one, the first failure stops the
    /// rest: they are not run.
    ///
    /// - Throws: ``PipelineFailure`` with the first failing statement and its error
    ///   (`.connectionLost` when the connection dropped).
    func pipeline(_ statements: [SQLStatement]) throws(PipelineFailure) -> [PostgreSQLResult] {
        var results: [PostgreSQLResult] = []
        try pipeline(statements, into: &results)
        return results
    }

    /// ``pipeline(_:)``, appending the results to `results` as they come: after a failure,
    /// `results` holds those of the statements that ran.
    func pipeline(_ statements: [SQLStatement], flushAfter: Int? = nil, into results: inout [PostgreSQLResult])
        throws(PipelineFailure)
    {
        guard PQenterPipelineMode(handle) == 1 else {
            throw PipelineFailure(index: 0, error: failure("could not start a pipeline", statements.first?.sql ?? ""))
        }
        // What each result read back answers: a statement's preparation, or the statement.
        enum Expected {
            case preparation(name: String, sql: String)
            case statement(Int)
        }
        var expected: [Expected] = []
        var pending: [String: String] = [:]
        var sent = true
        for (i, s) in statements.enumerated() where sent {
            if i == flushAfter { sent = PQsendFlushRequest(handle) == 1 }
            var name: String?
            if s.prepare {
                if let known = prepared[s.sql] ?? pending[s.sql] {
                    name = known
                } else {
                    let fresh = "pk\(prepared.count + pending.count + 1)"
                    sent = sent && PQsendPrepare(handle, fresh, s.sql, 0, nil) == 1
                    pending[s.sql] = fresh
                    expected.append(.preparation(name: fresh, sql: s.sql))
                    name = fresh
                }
            }
            let n = Int32(s.parameters.count)
            let format: Int32 = s.binary ? 1 : 0
            // libpq copies the values into its output buffer before the call returns.
            sent =
                sent
                && (try? withParameters(s.parameters) { values, lengths, formats in
                    if let name {
                        PQsendQueryPrepared(handle, name, n, values, lengths, formats, format) == 1
                    } else {
                        PQsendQueryParams(handle, s.sql, n, nil, values, lengths, formats, format) == 1
                    }
                }) == true
            if sent { expected.append(.statement(i)) }
        }
        sent = PQpipelineSync(handle) == 1 && sent
        results.reserveCapacity(statements.count)
        let base = results.count
        var first: PipelineFailure?
        for e in expected {
            // Each sent command answers with one result, then nil.
            guard let r = PQgetResult(handle) else {
                broken = true
                first = first ?? PipelineFailure(index: results.count - base, error: failure("the server's answer ended early", ""))
                break
            }
            while let extra = PQgetResult(handle) { PQclear(extra) }
            switch e {
            case let .preparation(name, sql):
                let status = PQresultStatus(r)
                if status == PGRES_COMMAND_OK {
                    prepared[sql] = name
                    PQclear(r)
                } else if first == nil {
                    first = describe(r, sql, index: statements.firstIndex { $0.sql == sql } ?? 0)
                } else {
                    PQclear(r)
                }
            case let .statement(i):
                let status = PQresultStatus(r)
                if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK {
                    results.append(PostgreSQLResult(r, binary: statements[i].binary))
                } else if first == nil {
                    first = describe(r, statements[i].sql, index: i)
                } else {
                    PQclear(r)
                }
            }
        }
        if !broken {
            // The sync's own result closes the pipeline; then the connection is idle again.
            if let r = PQgetResult(handle) {
                if PQresultStatus(r) != PGRES_PIPELINE_SYNC { broken = true }
                PQclear(r)
            } else {
                broken = true
            }
        }
        if PQexitPipelineMode(handle) != 1 { broken = true }
        if !sent && first == nil {
            let error = failure("could not send the statements", statements.first?.sql ?? "")
            first = PipelineFailure(index: results.count - base, error: error)
        }
        if var first {
            // A failure read before libpq saw the connection close (the server's FATAL
            // message comes first) is the connection's loss, not the statement's fault.
            let state = first.error.sqlState ?? ""
            if first.error.kind == .query && (!isHealthy || state.hasPrefix("57P0") || state.hasPrefix("08")) {
                broken = true
                first.error = PostgreSQLStoreError(
                    .connectionLost, target: target, first.error.message, sqlState: first.error.sqlState)
            }
            throw first
        }
    }

    /// The failure `result` reports (the result freed).
    private func describe(_ result: OpaquePointer, _ sql: String, index: Int) -> PipelineFailure {
        do {
            _ = try check(result, sql)
            return PipelineFailure(index: index, error: failure("the statement returned no result", sql))
        } catch {
            return PipelineFailure(index: index, error: error)
        }
    }

    /// An error for a pipeline that went wrong on the client's side: the connection dropped,
    /// or libpq refused a statement.
    private func failure(_ what: String, _ sql: String) -> PostgreSQLStoreError {
        PostgreSQLStoreError(
            isHealthy ? .query : .connectionLost, target: target, "\(what): \(errorMessage) (running: \(Self.head(sql)))")
    }
}
