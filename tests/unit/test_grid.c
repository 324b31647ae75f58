/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/unit/test_grid.c: the grid (common/grid.c) and the text parsers
 * under it: syntax, resolution against a step, coordinates, group
 * membership (Megatron's tp-dp order) and the node-spanning check. */
#include "config.h"

#include "common/grid.h"
#include "common/status.h"
#include "common/text.h"
#include "tests/unit/check.h"

static void expect_parse_error(const char *text, const char *message)
{
  dlpar_grid_request req;
  dlpar_error err = {0};
  CHECK_INT(dlpar_grid_parse(text, &req, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, message);
}

static void test_parse(void)
{
  dlpar_grid_request req;
  dlpar_error err = {0};
  CHECK_INT(dlpar_grid_parse("4x2", &req, &err), DLPAR_OK);
  CHECK_INT(req.tp, 4);
  CHECK_INT(req.dp, 2);
  CHECK_INT(dlpar_grid_parse("8", &req, &err), DLPAR_OK);
  CHECK_INT(req.tp, 8);
  CHECK_INT(req.dp, 0);
  CHECK_INT(dlpar_grid_parse("1X16", &req, &err), DLPAR_OK);
  CHECK_INT(req.dp, 16);
  expect_parse_error("", "--dl-parallel needs a value MxD (e.g. --dl-parallel=4x2)");
  expect_parse_error("0x4", "--dl-parallel=0x4: M must be at least 1 (e.g. --dl-parallel=1x4)");
  expect_parse_error("4x0", "--dl-parallel=4x0: D must be at least 1 (e.g. --dl-parallel=4x1)");
  expect_parse_error("4x", "--dl-parallel=4x: expected MxD or M with whole numbers (e.g. --dl-parallel=4x2)");
  expect_parse_error("-4x2", "--dl-parallel=-4x2: expected MxD or M with whole numbers (e.g. --dl-parallel=4x2)");
  expect_parse_error("4x2x1", "--dl-parallel=4x2x1: expected MxD or M with whole numbers (e.g. --dl-parallel=4x2)");
  expect_parse_error("99999999999999999999x1", "--dl-parallel=99999999999999999999x1: M is too large (at most 1048576)");
  expect_parse_error("4\x1b" "2", "--dl-parallel=4\\x1b2: expected MxD or M with whole numbers (e.g. --dl-parallel=4x2)");
  expect_parse_error("4\xc3\x97" "2", "--dl-parallel=4\xc3\x97" "2: expected MxD or M with whole numbers (e.g. --dl-parallel=4x2)");
}

static void test_resolve(void)
{
  dlpar_grid_request req;
  dlpar_grid grid;
  dlpar_error err = {0};
  dlpar_grid_parse("4x3", &req, &err);
  CHECK_INT(dlpar_grid_resolve(&req, 8, &grid, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "--dl-parallel=4x3 needs 12 tasks but the step has 8 (use -n 12 or --dl-parallel=4x2)");
  dlpar_grid_parse("3x3", &req, &err);
  CHECK_INT(dlpar_grid_resolve(&req, 8, &grid, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "--dl-parallel=3x3 needs 9 tasks but the step has 8 (use -n 9)");
  dlpar_grid_parse("1x1", &req, &err); /* counts agree with their nouns */
  CHECK_INT(dlpar_grid_resolve(&req, 2, &grid, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "--dl-parallel=1x1 needs 1 task but the step has 2 (use -n 1 or --dl-parallel=1x2)");
  dlpar_grid_parse("2", &req, &err);
  CHECK_INT(dlpar_grid_resolve(&req, 1, &grid, &err), DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "--dl-parallel=2: 1 task cannot form groups of 2 (use a task count that is a multiple of 2, or "
                      "--dl-parallel=M with M dividing 1)");
  dlpar_grid_parse("3", &req, &err);
  CHECK_INT(dlpar_grid_resolve(&req, 8, &grid, &err), DLPAR_ERR_INPUT);
  dlpar_grid_parse("2", &req, &err);
  CHECK_INT(dlpar_grid_resolve(&req, 8, &grid, &err), DLPAR_OK);
  CHECK_INT(grid.dp, 4);
}

/* Megatron / SC24 tutorial order for M=4, D=2. */
static void test_members(void)
{
  const dlpar_grid grid = {4, 2};
  int ranks[8], tp_rank, dp_rank;
  CHECK_INT(dlpar_grid_members(&grid, DLPAR_GROUP_TP, 5, ranks), 4);
  CHECK(ranks[0] == 4 && ranks[1] == 5 && ranks[2] == 6 && ranks[3] == 7);
  CHECK_INT(dlpar_grid_members(&grid, DLPAR_GROUP_DP, 2, ranks), 2);
  CHECK(ranks[0] == 2 && ranks[1] == 6);
  CHECK_INT(dlpar_grid_members(&grid, DLPAR_GROUP_DP, 7, ranks), 2);
  CHECK(ranks[0] == 3 && ranks[1] == 7);
  CHECK_INT(dlpar_grid_members(&grid, DLPAR_GROUP_WORLD, 3, ranks), 8);
  CHECK_INT(ranks[7], 7);
  dlpar_grid_coords(&grid, 6, &tp_rank, &dp_rank);
  CHECK(tp_rank == 2 && dp_rank == 1);
  /* every rank is in exactly one tp and one dp group, and they cross once */
  for (int r = 0; r < 8; r++) {
    int tp[8], dp[8], common = 0;
    dlpar_grid_members(&grid, DLPAR_GROUP_TP, r, tp);
    dlpar_grid_members(&grid, DLPAR_GROUP_DP, r, dp);
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 2; j++)
        common += tp[i] == dp[j];
    CHECK_INT(common, 1);
  }
}

static void test_span(void)
{
  const dlpar_grid grid = {2, 3};
  const int per_node[2] = {3, 3};
  const char *names[2] = {"n1", "n2"};
  int rank_node[6], first = -1;
  dlpar_error err = {0};
  dlpar_grid_block_nodes(per_node, 2, rank_node);
  CHECK(rank_node[2] == 0 && rank_node[3] == 1);
  CHECK_INT(dlpar_grid_check_span(&grid, rank_node, names, DLPAR_SPAN_ERROR, &first, &err),
            DLPAR_ERR_INPUT);
  CHECK_STR(err.text, "--dl-parallel=2x3: tensor-parallel group 1 (ranks 2-3) spans n1 and n2 (give every node a "
                      "multiple of 2 tasks, e.g. --ntasks-per-node=2, or ask the admin for tp_span=warn)");
  CHECK_INT(first, 2);
  CHECK_INT(dlpar_grid_check_span(&grid, rank_node, NULL, DLPAR_SPAN_WARN, NULL, &err), DLPAR_WARN);
  CHECK_STR(err.text, "warning: --dl-parallel=2x3: tensor-parallel group 1 (ranks 2-3) spans node 0 and node 1 (give "
                      "every node a multiple of 2 tasks, e.g. --ntasks-per-node=2)");
  first = -1;
  CHECK_INT(dlpar_grid_check_span(&grid, rank_node, NULL, DLPAR_SPAN_ALLOW, &first, &err), DLPAR_OK);
  CHECK_INT(first, 2);
  {
    const dlpar_grid fits = {2, 2};
    const int two_each[2] = {2, 2};
    int nodes[4];
    dlpar_grid_block_nodes(two_each, 2, nodes);
    CHECK_INT(dlpar_grid_check_span(&fits, nodes, NULL, DLPAR_SPAN_ERROR, NULL, &err), DLPAR_OK);
  }
}

static void test_text(void)
{
  long value;
  double seconds;
  dlpar_rank_list list;
  CHECK_INT(dlpar_parse_uint("123", 3, 1000, &value), 0);
  CHECK_INT(value, 123);
  CHECK_INT(dlpar_parse_uint("1234", 4, 1000, &value), -2);
  CHECK_INT(dlpar_parse_uint("", 0, 1000, &value), -1);
  CHECK_INT(dlpar_parse_uint("1 2", 3, 1000, &value), -1);
  CHECK_INT(dlpar_parse_int("-1", -1, 10, &value), 0);
  CHECK_INT(value, -1);
  CHECK_INT(dlpar_parse_int("-2", -1, 10, &value), -1);
  CHECK_INT(dlpar_parse_int("11", -1, 10, &value), -1);
  CHECK_INT(dlpar_parse_seconds("120", &seconds), 0);
  CHECK(seconds == 120);
  CHECK_INT(dlpar_parse_seconds("0.5", &seconds), 0);
  CHECK(seconds == 0.5);
  for (int i = 0; i < 9; i++)
    CHECK_INT(dlpar_parse_seconds((const char *[]){"", "0", "-5", "abc", "12s", "1e3", " 5", "5.", "99999999"}[i],
                                  &seconds), -1);
  CHECK_STR(dlpar_plural(1, "thread", "threads"), "thread");
  CHECK_STR(dlpar_plural(-1, "degree", "degrees"), "degree");
  CHECK_STR(dlpar_plural(0, "thread", "threads"), "threads");
  CHECK_STR(dlpar_plural(2, "batch", "batches"), "batches");
  CHECK_INT(dlpar_rank_list_parse("0,2,5-7", &list), 0);
  CHECK(dlpar_rank_list_has(&list, 6) && !dlpar_rank_list_has(&list, 4) && !dlpar_rank_list_has(&list, 8));
  CHECK_INT(dlpar_rank_list_max(&list), 7);
  CHECK_INT(dlpar_rank_list_parse("3-1", &list), -1);
  CHECK_INT(dlpar_rank_list_parse("1,,2", &list), -1);
  CHECK_INT(dlpar_rank_list_parse("all", &list), 0);
  CHECK(list.all && dlpar_rank_list_has(&list, 1000));
}

/* Input text in a message: one line, escaped as C writes it, cut with "...". */
static void test_quote(void)
{
  char buf[16], long_text[400];
  CHECK_STR(dlpar_quote("a\nb\tc\rd", buf, sizeof(buf)), "a\\nb\\tc\\rd");
  CHECK_STR(dlpar_quote("\x1b[31m\x7f", buf, sizeof(buf)), "\\x1b[31m\\x7f");
  CHECK_STR(dlpar_quote("0123456789abcdefghij", buf, sizeof(buf)), "0123456789ab...");
  CHECK_STR(dlpar_quote("0123456789abcde", buf, sizeof(buf)), "0123456789abcde"); /* fits exactly */
  CHECK_STR(dlpar_quote("0123456789abc\n", buf, sizeof(buf)), "0123456789abc\\n");
  CHECK_STR(dlpar_quote("0123456789abcd\n", buf, sizeof(buf)), "0123456789ab...");
  CHECK_STR(dlpar_quote(NULL, buf, sizeof(buf)), "(none)");
  CHECK_STR(dlpar_quote("x", buf, 1), "");
  /* printable UTF-8 as is; invalid, C1 controls, line separators and bidi overrides escaped */
  CHECK_STR(dlpar_show("M\xc3\xbcller").text, "M\xc3\xbcller");
  CHECK_STR(dlpar_show("\xc3").text, "\\xc3");
  CHECK_STR(dlpar_show("\xc2\x9b").text, "\\xc2\\x9b");
  CHECK_STR(dlpar_show("a\xe2\x80\xa8" "b").text, "a\\xe2\\x80\\xa8" "b");
  CHECK_STR(dlpar_show("\xe2\x80\xae").text, "\\xe2\\x80\\xae");
  CHECK_STR(dlpar_show("\xc0\xaf").text, "\\xc0\\xaf");
  CHECK_STR(dlpar_show("\xef\xbf\xbe").text, "\\xef\\xbf\\xbe");
  CHECK_STR(dlpar_show("\xf5\x80\x80\x80").text, "\\xf5\\x80\\x80\\x80");
  CHECK_STR(dlpar_show("\xf0\x9f\x98\x80").text, "\xf0\x9f\x98\x80");
  memset(long_text, '\n', sizeof(long_text) - 1);
  long_text[sizeof(long_text) - 1] = '\0';
  CHECK(strlen(dlpar_show(long_text).text) == DLPAR_SHOWN_LEN - 1); /* 78 of "\\n", then "..." */
  CHECK(strchr(dlpar_show(long_text).text, '\n') == NULL);
  CHECK(strcmp(dlpar_show(long_text).text + DLPAR_SHOWN_LEN - 4, "...") == 0);
}

int main(void)
{
  test_parse();
  test_resolve();
  test_members();
  test_span();
  test_text();
  test_quote();
  return check_report("test_grid");
}
