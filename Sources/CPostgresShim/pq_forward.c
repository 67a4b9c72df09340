// The libpq functions Herald calls, forwarded to libpq.so.5 opened on first use.
#include "cpostgres_shim.h"

#include <herald_dynload.h>
#include <postgresql/libpq-fe.h>

#define PQ_FUNCTIONS(F, V) \
    F(PGconn *, PQconnectdb, (const char *conninfo), (conninfo)) \
    V(PQfinish, (PGconn *conn), (conn)) \
    F(ConnStatusType, PQstatus, (const PGconn *conn), (conn)) \
    F(char *, PQerrorMessage, (const PGconn *conn), (conn)) \
    F(int, PQsocket, (const PGconn *conn), (conn)) \
    F(PQnoticeProcessor, PQsetNoticeProcessor, (PGconn *conn, PQnoticeProcessor proc, void *arg), (conn, proc, arg)) \
    F(PGresult *, PQexec, (PGconn *conn, const char *query), (conn, query)) \
    F(PGresult *, PQprepare, (PGconn *conn, const char *stmtName, const char *query, int nParams, const Oid *paramTypes), \
      (conn, stmtName, query, nParams, paramTypes)) \
    F(PGresult *, PQexecPrepared, (PGconn *conn, const char *stmtName, int nParams, const char *const *paramValues, \
                                   const int *paramLengths, const int *paramFormats, int resultFormat), \
      (conn, stmtName, nParams, paramValues, paramLengths, paramFormats, resultFormat)) \
    F(int, PQconsumeInput, (PGconn *conn), (conn)) \
    F(int, PQsendQuery, (PGconn *conn, const char *query), (conn, query)) \
    F(int, PQsendPrepare, (PGconn *conn, const char *stmtName, const char *query, int nParams, const Oid *paramTypes), \
      (conn, stmtName, query, nParams, paramTypes)) \
    F(int, PQsendQueryPrepared, (PGconn *conn, const char *stmtName, int nParams, const char *const *paramValues, \
                                 const int *paramLengths, const int *paramFormats, int resultFormat), \
      (conn, stmtName, nParams, paramValues, paramLengths, paramFormats, resultFormat)) \
    F(int, PQisBusy, (PGconn *conn), (conn)) \
    F(PGresult *, PQgetResult, (PGconn *conn), (conn)) \
    F(int, PQflush, (PGconn *conn), (conn)) \
    F(int, PQsetnonblocking, (PGconn *conn, int arg), (conn, arg)) \
    F(PGnotify *, PQnotifies, (PGconn *conn), (conn)) \
    F(ExecStatusType, PQresultStatus, (const PGresult *res), (res)) \
    F(char *, PQresultErrorMessage, (const PGresult *res), (res)) \
    F(char *, PQresultErrorField, (const PGresult *res, int fieldcode), (res, fieldcode)) \
    F(int, PQntuples, (const PGresult *res), (res)) \
    F(int, PQnfields, (const PGresult *res), (res)) \
    F(char *, PQfname, (const PGresult *res, int field_num), (res, field_num)) \
    F(char *, PQcmdStatus, (PGresult *res), (res)) \
    F(char *, PQcmdTuples, (PGresult *res), (res)) \
    F(char *, PQgetvalue, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num)) \
    F(int, PQgetisnull, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num)) \
    V(PQclear, (PGresult *res), (res)) \
    V(PQfreemem, (void *ptr), (ptr))

HERALD_DYN_LIBRARY(PQ_FUNCTIONS, herald_pq_load, "libpq5", "libpq.so.5")

PQ_FUNCTIONS(HERALD_DYN_FORWARD, HERALD_DYN_FORWARD_V)
