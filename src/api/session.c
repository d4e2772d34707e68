/* session.c — /_session: POST logs in (a JSON or form body) and sets the
 * AuthSession cookie, GET tells who is asking, DELETE clears the cookie
 * (couch_httpd_auth:handle_session_req). The credentials and the cookie
 * itself are auth/'s.
 */
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "auth/authparse.h"

#define MAX_NAME 1024 /* longer user names are never valid */

static void set_cookie(hreq *r, const char *value, long max_age) {
  auth_env e = {.st = api_store(r), .cfg = api_config(r), .a = &r->a};
  const char *h = auth_cookie_header(&e, value, max_age);
  if (h) hres_header(r, "Set-Cookie", h);
}

static void put_roles(json_w *w, const char *const *roles, int n) {
  json_w_arr_begin(w);
  for (int i = 0; i < n; i++)
    if (roles[i]) json_w_strz(w, roles[i]);
  json_w_arr_end(w);
}

static void session_get(hreq *r) {
  const char *basic = hq_get(r, "basic", NULL);
  if (!r->app->user && basic && !strcmp(basic, "true")) {
    hres_errw(r, DV_EUNAUTHORIZED, "Please login.");
    return;
  }
  json_w w;
  hres_jw(r, 200, &w);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "ok");
  json_w_bool(&w, 1);
  json_w_keyz(&w, "userCtx");
  json_w_obj_begin(&w);
  json_w_keyz(&w, "name");
  if (r->app->user) json_w_strz(&w, r->app->user);
  else json_w_null(&w);
  json_w_keyz(&w, "roles");
  put_roles(&w, r->app->roles, r->app->nroles);
  json_w_obj_end(&w);
  json_w_keyz(&w, "info");
  json_w_obj_begin(&w);
  json_w_keyz(&w, "authentication_handlers");
  json_w_arr_begin(&w);
  unsigned on = auth_handlers(api_config(r));
  if (on & AUTH_JWT) json_w_strz(&w, "jwt");
  if (on & AUTH_PROXY) json_w_strz(&w, "proxy");
  json_w_strz(&w, "cookie");
  json_w_strz(&w, "default");
  json_w_arr_end(&w);
  if (r->app->auth_via) {
    json_w_keyz(&w, "authenticated");
    json_w_strz(&w, r->app->auth_via);
  }
  json_w_obj_end(&w);
  json_w_obj_end(&w);
}

static void session_post(hreq *r) {
  const char *ct = hreq_hdr(r, "Content-Type");
  const char *name = NULL, *password = NULL;
  const char *uname = NULL;
  int have_name = 0, have_uname = 0;
  if (ct && !strncasecmp(ct, "application/x-www-form-urlencoded", 33)) {
    name = ap_form_field(&r->a, r->body, r->body_len, "name", &have_name);
    uname = ap_form_field(&r->a, r->body, r->body_len, "username", &have_uname);
    password = ap_form_field(&r->a, r->body, r->body_len, "password", NULL);
  } else if (ct && !strncasecmp(ct, "application/json", 16)) {
    json_val *b;
    if (hreq_json_body(r, 1, &b)) return;
    const json_val *n = json_obj_getz(b, "name"), *un = json_obj_getz(b, "username"), *p = json_obj_getz(b, "password");
    have_name = n != NULL, have_uname = un != NULL;
    /* a NUL inside either would cut it short: such a pair never matches */
    if (n && n->type == JSON_STRING && !memchr(n->u.s, 0, n->len)) name = arena_strndup(&r->a, n->u.s, n->len);
    if (un && un->type == JSON_STRING && !memchr(un->u.s, 0, un->len)) uname = arena_strndup(&r->a, un->u.s, un->len);
    if (p && p->type == JSON_STRING && !memchr(p->u.s, 0, p->len)) password = arena_strndup(&r->a, p->u.s, p->len);
  } else {
    hres_errw(r, DV_EBAD_CONTENT_TYPE, "Content-Type must be application/x-www-form-urlencoded or application/json");
    return;
  }
  /* couch_httpd_auth:extract_username: "name" or "username", not two
   * different ones, and one of them */
  if (!have_name && !have_uname) {
    hres_errw(r, DV_EBAD_REQUEST, "request body must contain a username");
    return;
  }
  if (have_name && have_uname && (!name || !uname || strcmp(name, uname))) {
    hres_errw(r, DV_EBAD_REQUEST, "request body contains different usernames");
    return;
  }
  if (!have_name) name = uname;
  int ok = 0;
  const char **roles = NULL;
  int nroles = 0;
  auth_env e = {.st = api_store(r), .cfg = api_config(r), .a = &r->a};
  if (name && password && strlen(name) <= MAX_NAME) {
    int rc = auth_check_password(&e, name, password, &ok, &roles, &nroles);
    if (rc) {
      hres_err(r, rc);
      return;
    }
  }
  if (!ok) {
    hres_errw(r, DV_EUNAUTHORIZED, "Name or password is incorrect.");
    return;
  }
  const char *c = auth_session_cookie(&e, name);
  if (!c) {
    hres_errw(r, DV_EINTERNAL, "No [chttpd_auth] secret.");
    return;
  }
  set_cookie(r, c, auth_session_timeout(e.cfg));
  const char *next = hq_get(r, "next", NULL);
  json_w w;
  hres_jw(r, next ? 302 : 200, &w);
  if (next) hres_header(r, "Location", next);
  json_w_obj_begin(&w);
  json_w_keyz(&w, "ok");
  json_w_bool(&w, 1);
  json_w_keyz(&w, "name");
  json_w_strz(&w, name);
  json_w_keyz(&w, "roles");
  put_roles(&w, roles, nroles);
  json_w_obj_end(&w);
}

void hapi_session(hreq *r) {
  switch (r->method) {
  case HM_GET:
  case HM_HEAD:
    session_get(r);
    break;
  case HM_POST:
    session_post(r);
    break;
  case HM_DELETE:
    set_cookie(r, "", 0);
    if (hq_get(r, "next", NULL)) {
      hres_header(r, "Location", hq_get(r, "next", NULL));
      json_w w;
      hres_jw(r, 302, &w);
      json_w_obj_begin(&w);
      json_w_keyz(&w, "ok");
      json_w_bool(&w, 1);
      json_w_obj_end(&w);
    } else {
      hres_ok(r, 200);
    }
    break;
  default:
    hres_method(r, "GET,HEAD,POST,DELETE");
  }
}

