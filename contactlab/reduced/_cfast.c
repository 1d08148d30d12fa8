/* Compiled-ahead forward dynamics, inverse dynamics and mass matrix of a prepared model.
 *
 * The same recursions as the numba kernels of contactlab/reduced/_fast.py (read
 * that module for the array layout and the formulas), written in C so that they
 * are built once when the package is installed: a fresh process calls them
 * without compiling anything, and a call costs no dispatch beyond a few type
 * checks.  A `Kernels` object is made once per model; it keeps references to the
 * model's arrays and owns the per-node workspace, so a call allocates only its
 * result (or none, with `out=`).  Calls hold the interpreter lock, so a model
 * shared by threads is used by one call at a time.
 *
 * Node layout: topo (n, 6) int64 = parent, kind, first coordinate, number of
 * coordinates, row in ext, end of subtree; geom (n + 1, 75) float64 (offsets
 * below, last row = gravity); dofp (4, nq) = stiffness, damping, rest position, armature;
 * ext (m, 88) = Q (16), S (36), Sdot (36) of OTHER nodes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

enum { FIXED = 0, REVOLUTE = 1, PRISMATIC = 2, SPHERICAL = 3, OTHER = 4 };
enum { PARENT = 0, KIND = 1, DOF0 = 2, NDOF = 3, EXT = 4, END = 5, NTOPO = 6 };
enum { RP = 0, PP = 9, RC = 12, PC = 21, AXIS = 24, INERTIA = 27, ADFC = 33, SCONST = 69, NGEOM = 75 };
enum { NEXT = 88 };

/* Below this angle the spherical-joint coefficients come from their series. */
#define SERIES_BELOW 1.0

typedef struct {
    PyObject_HEAD
    PyObject *topo_obj, *geom_obj, *dofp_obj;
    const int64_t *topo;
    const double *geom;
    const double *dofp;
    Py_ssize_t n, nq, m;
    double *work;
    double *X, *Sb, *c, *V, *eta, *IA, *pA, *U, *Dinv, *u, *A, *F, *Ic, *tt, *zeros;
} Kernels;

/* ---------------------------------------------------------------- small algebra */

static void coefficients(double t, double *b, double *c, double *b1, double *c1)
{
    /* b, c of J_r = I - b [q] + c [q]^2 and b1 = b'/t, c1 = c'/t */
    if (t < SERIES_BELOW) {
        double t2 = t * t, power = 1.0, fact = 2.0, sign = 1.0;
        double sb = 0, sc = 0, sb1 = 0, sc1 = 0;
        for (int k = 0; k < 12; k++) {
            if (k > 0) fact *= (2 * k + 1) * (2 * k + 2);
            double fact3 = fact * (2 * k + 3);
            sb += sign * power / fact;
            sc += sign * power / fact3;
            if (k >= 1) {
                double pk1 = t2 > 0.0 ? power / t2 : (k == 1 ? 1.0 : 0.0);
                sb1 += sign * 2 * k * pk1 / fact;
                sc1 += sign * 2 * k * pk1 / fact3;
            }
            power *= t2;
            sign = -sign;
        }
        *b = sb; *c = sc; *b1 = sb1; *c1 = sc1;
        return;
    }
    double s = sin(t), co = cos(t);
    *b = (1.0 - co) / (t * t);
    *c = (t - s) / (t * t * t);
    *b1 = (t * s - 2.0 * (1.0 - co)) / (t * t * t * t);
    *c1 = (3.0 * s - 2.0 * t - t * co) / (t * t * t * t * t);
}

static void skew(const double *v, double out[3][3])
{
    out[0][0] = out[1][1] = out[2][2] = 0.0;
    out[0][1] = -v[2]; out[0][2] = v[1]; out[1][2] = -v[0];
    out[1][0] = v[2]; out[2][0] = -v[1]; out[2][1] = v[0];
}

/* J_r(q) and its derivative along u (_right_jacobian_rate of _fast.py): with
 * [q]^2 = q q^T - |q|^2 1 and [u][q] + [q][u] = q u^T + u q^T - 2 (q.u) 1. */
static void right_jacobian(const double *q, const double *u, double J0[3][3], double J1[3][3])
{
    double tt = q[0] * q[0] + q[1] * q[1] + q[2] * q[2];
    double b, c, b1, c1;
    coefficients(sqrt(tt), &b, &c, &b1, &c1);
    double W[3][3], Uu[3][3];
    skew(q, W);
    skew(u, Uu);
    double qu = q[0] * u[0] + q[1] * u[1] + q[2] * u[2];
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++) {
            double d = r == k ? 1.0 : 0.0;
            double w2 = q[r] * q[k] - tt * d;
            double uw = q[r] * u[k] + u[r] * q[k] - 2.0 * qu * d;
            J0[r][k] = d - b * W[r][k] + c * w2;
            J1[r][k] = -b1 * qu * W[r][k] - b * Uu[r][k] + c1 * qu * w2 + c * uw;
        }
}

static void exp_rotation(double a0, double a1, double a2, double t, double R[3][3])
{
    double s = sin(t), v = 1.0 - cos(t);
    R[0][0] = 1.0 - v * (a1 * a1 + a2 * a2);
    R[1][1] = 1.0 - v * (a0 * a0 + a2 * a2);
    R[2][2] = 1.0 - v * (a0 * a0 + a1 * a1);
    R[0][1] = -s * a2 + v * a0 * a1;
    R[1][0] = s * a2 + v * a0 * a1;
    R[0][2] = s * a1 + v * a0 * a2;
    R[2][0] = -s * a1 + v * a0 * a2;
    R[1][2] = -s * a0 + v * a1 * a2;
    R[2][1] = s * a0 + v * a1 * a2;
}

/* X[i] (6x6, row-major), Sb[i] (6x6, ndof columns used) and c[i] = Sbd_i qd_i. */
static void node_kinematics(const Kernels *k, Py_ssize_t i, const double *ext, const double *q,
                            const double *qd)
{
    const int64_t *tp = k->topo + NTOPO * i;
    const int64_t kind = tp[KIND], k0 = tp[DOF0];
    const double *g = k->geom + NGEOM * i;
    double *Sb = k->Sb + 36 * i, *c = k->c + 6 * i, *x = k->X + 36 * i;
    double Rq[3][3], T[3][3], pq[3] = {0.0, 0.0, 0.0}, pl[3];
    for (int r = 0; r < 6; r++) c[r] = 0.0;
    if (kind == REVOLUTE) {
        exp_rotation(g[AXIS], g[AXIS + 1], g[AXIS + 2], q[k0], Rq);
        for (int r = 0; r < 6; r++) Sb[6 * r] = g[SCONST + r];
    } else if (kind == PRISMATIC) {
        for (int r = 0; r < 3; r++) {
            for (int j = 0; j < 3; j++) Rq[r][j] = r == j ? 1.0 : 0.0;
            pq[r] = g[AXIS + r] * q[k0];
        }
        for (int r = 0; r < 6; r++) Sb[6 * r] = g[SCONST + r];
    } else if (kind == SPHERICAL) {
        const double *qj = q + k0, *qdj = qd + k0;
        double t = sqrt(qj[0] * qj[0] + qj[1] * qj[1] + qj[2] * qj[2]);
        if (t > 0.0) {
            exp_rotation(qj[0] / t, qj[1] / t, qj[2] / t, t, Rq);
        } else {
            for (int r = 0; r < 3; r++)
                for (int j = 0; j < 3; j++) Rq[r][j] = r == j ? 1.0 : 0.0;
        }
        double J0[3][3], J1[3][3], w[3];
        right_jacobian(qj, qdj, J0, J1);
        for (int r = 0; r < 3; r++) w[r] = J1[r][0] * qdj[0] + J1[r][1] * qdj[1] + J1[r][2] * qdj[2];
        for (int r = 0; r < 6; r++) {
            const double *ad = g + ADFC + 6 * r;
            double s = 0.0;
            for (int m = 0; m < 3; m++) {
                s += ad[m] * w[m];
                Sb[6 * r + m] = ad[0] * J0[0][m] + ad[1] * J0[1][m] + ad[2] * J0[2][m];
            }
            c[r] = s;
        }
    } else if (kind == OTHER) {
        const double *e = ext + NEXT * tp[EXT];
        const int64_t nd = tp[NDOF];
        for (int r = 0; r < 3; r++) {
            for (int j = 0; j < 3; j++) Rq[r][j] = e[4 * r + j];
            pq[r] = e[4 * r + 3];
        }
        for (int r = 0; r < 6; r++) {
            const double *ad = g + ADFC + 6 * r;
            double s = 0.0;
            for (int64_t m = 0; m < nd; m++) {
                double sm = 0.0, sdm = 0.0;
                for (int j = 0; j < 6; j++) {
                    sm += ad[j] * e[16 + 6 * j + m];
                    sdm += ad[j] * e[52 + 6 * j + m];
                }
                Sb[6 * r + m] = sm;
                s += sdm * qd[k0 + m];
            }
            c[r] = s;
        }
    } else {
        for (int r = 0; r < 3; r++)
            for (int j = 0; j < 3; j++) Rq[r][j] = r == j ? 1.0 : 0.0;
    }
    /* L = frame_parent Q frame_child^{-1};  X = Ad(L^{-1}) = [[A, 0], [[t] A, A]] */
    for (int r = 0; r < 3; r++)
        for (int j = 0; j < 3; j++)
            T[r][j] = g[RP + 3 * r] * Rq[0][j] + g[RP + 3 * r + 1] * Rq[1][j] + g[RP + 3 * r + 2] * Rq[2][j];
    for (int r = 0; r < 3; r++) {
        pl[r] = g[PP + r] + T[r][0] * g[PC] + T[r][1] * g[PC + 1] + T[r][2] * g[PC + 2];
        pl[r] += g[RP + 3 * r] * pq[0] + g[RP + 3 * r + 1] * pq[1] + g[RP + 3 * r + 2] * pq[2];
    }
    for (int r = 0; r < 3; r++)
        for (int j = 0; j < 3; j++) {
            double a = T[j][0] * g[RC + r] + T[j][1] * g[RC + 3 + r] + T[j][2] * g[RC + 6 + r];
            x[6 * r + j] = a;
            x[6 * r + j + 3] = 0.0;
            x[6 * (r + 3) + j + 3] = a;
        }
    double t0 = -(x[0] * pl[0] + x[1] * pl[1] + x[2] * pl[2]);
    double t1 = -(x[6] * pl[0] + x[7] * pl[1] + x[8] * pl[2]);
    double t2 = -(x[12] * pl[0] + x[13] * pl[1] + x[14] * pl[2]);
    for (int j = 0; j < 3; j++) {
        x[18 + j] = t1 * x[12 + j] - t2 * x[6 + j];
        x[24 + j] = t2 * x[j] - t0 * x[12 + j];
        x[30 + j] = t0 * x[6 + j] - t1 * x[j];
    }
}

/* out = X v for X = [[A, 0], [B, A]] */
static inline void x_mul(const double *x, const double *v, double *out)
{
    for (int r = 0; r < 3; r++) {
        const double *a = x + 6 * r, *b = x + 6 * (r + 3);
        out[r] = a[0] * v[0] + a[1] * v[1] + a[2] * v[2];
        out[r + 3] = b[0] * v[0] + b[1] * v[1] + b[2] * v[2] + a[0] * v[3] + a[1] * v[4] + a[2] * v[5];
    }
}

/* out += X^T f */
static inline void xt_mul_add(const double *x, const double *f, double *out)
{
    for (int j = 0; j < 3; j++) {
        out[j] += x[j] * f[0] + x[6 + j] * f[1] + x[12 + j] * f[2] + x[18 + j] * f[3] + x[24 + j] * f[4] +
                  x[30 + j] * f[5];
        out[j + 3] += x[j] * f[3] + x[6 + j] * f[4] + x[12 + j] * f[5];
    }
}

/* out = ad(v) x */
static inline void ad_mul(const double *v, const double *x, double *out)
{
    double w0 = v[0], w1 = v[1], w2 = v[2], n0 = v[3], n1 = v[4], n2 = v[5];
    double a0 = x[0], a1 = x[1], a2 = x[2], b0 = x[3], b1 = x[4], b2 = x[5];
    out[0] = w1 * a2 - w2 * a1;
    out[1] = w2 * a0 - w0 * a2;
    out[2] = w0 * a1 - w1 * a0;
    out[3] = n1 * a2 - n2 * a1 + w1 * b2 - w2 * b1;
    out[4] = n2 * a0 - n0 * a2 + w2 * b0 - w0 * b2;
    out[5] = n0 * a1 - n1 * a0 + w0 * b1 - w1 * b0;
}

/* out = ad(v)^T y */
static inline void adt_mul(const double *v, const double *y, double *out)
{
    double w0 = v[0], w1 = v[1], w2 = v[2], n0 = v[3], n1 = v[4], n2 = v[5];
    double a0 = y[0], a1 = y[1], a2 = y[2], b0 = y[3], b1 = y[4], b2 = y[5];
    out[0] = -(w1 * a2 - w2 * a1) - (n1 * b2 - n2 * b1);
    out[1] = -(w2 * a0 - w0 * a2) - (n2 * b0 - n0 * b2);
    out[2] = -(w0 * a1 - w1 * a0) - (n0 * b1 - n1 * b0);
    out[3] = -(w1 * b2 - w2 * b1);
    out[4] = -(w2 * b0 - w0 * b2);
    out[5] = -(w0 * b1 - w1 * b0);
}

/* Newton-Euler wrench of one body in the Balafoutis-Patel form (body_force of _fast.py). */
static inline void body_force(const double *g, const double *v, const double *a, double *out)
{
    double i0 = g[INERTIA], i1 = g[INERTIA + 1], i2 = g[INERTIA + 2], m = g[INERTIA + 3];
    double h = 0.5 * (i0 + i1 + i2);
    double j0 = h - i0, j1 = h - i1, j2 = h - i2;
    double w0 = v[0], w1 = v[1], w2 = v[2];
    double o01 = -a[2] + w0 * w1, o10 = a[2] + w0 * w1;
    double o02 = a[1] + w0 * w2, o20 = -a[1] + w0 * w2;
    double o12 = -a[0] + w1 * w2, o21 = a[0] + w1 * w2;
    out[0] = o21 * j1 - o12 * j2;
    out[1] = o02 * j2 - o20 * j0;
    out[2] = o10 * j0 - o01 * j1;
    out[3] = m * (a[3] + w1 * v[5] - w2 * v[4]);
    out[4] = m * (a[4] + w2 * v[3] - w0 * v[5]);
    out[5] = m * (a[5] + w0 * v[4] - w1 * v[3]);
}

/* out += X^T P X for symmetric P (6x6 row-major) */
static void congruence_add(const double *x, const double *P, double *out)
{
    double T[6][6];
    for (int r = 0; r < 6; r++) {
        const double *p = P + 6 * r;
        for (int j = 0; j < 3; j++) {
            T[r][j] = p[0] * x[j] + p[1] * x[6 + j] + p[2] * x[12 + j] + p[3] * x[18 + j] + p[4] * x[24 + j] +
                      p[5] * x[30 + j];
            T[r][j + 3] = p[3] * x[j] + p[4] * x[6 + j] + p[5] * x[12 + j];
        }
    }
    for (int r = 0; r < 6; r++)
        for (int j = r; j < 6; j++) {
            double s;
            if (r < 3)
                s = x[r] * T[0][j] + x[6 + r] * T[1][j] + x[12 + r] * T[2][j] + x[18 + r] * T[3][j] +
                    x[24 + r] * T[4][j] + x[30 + r] * T[5][j];
            else
                s = x[r - 3] * T[3][j] + x[6 + r - 3] * T[4][j] + x[12 + r - 3] * T[5][j];
            out[6 * r + j] += s;
            if (j != r) out[6 * j + r] += s;
        }
}

/* out[:k, :k] (row stride 6) = D^{-1} for a small SPD D (k x k, row stride 6), Gauss-Jordan. */
static void spd_inverse(const double *D, int k, double *out)
{
    double W[36];
    for (int r = 0; r < k; r++)
        for (int m = 0; m < k; m++) {
            W[6 * r + m] = D[6 * r + m];
            out[6 * r + m] = r == m ? 1.0 : 0.0;
        }
    for (int col = 0; col < k; col++) {
        double piv = 1.0 / W[6 * col + col];
        for (int m = 0; m < k; m++) {
            W[6 * col + m] *= piv;
            out[6 * col + m] *= piv;
        }
        for (int r = 0; r < k; r++) {
            if (r == col) continue;
            double f = W[6 * r + col];
            if (f != 0.0)
                for (int m = 0; m < k; m++) {
                    W[6 * r + m] -= f * W[6 * col + m];
                    out[6 * r + m] -= f * out[6 * col + m];
                }
        }
    }
}

/* ---------------------------------------------------------------- recursions */

static void forward_dynamics(Kernels *k, const double *ext, const double *q, const double *qd,
                             const double *tau, const double *fext, int minv, double *qdd)
{
    const Py_ssize_t n = k->n, nq = k->nq;
    const double *dofp = k->dofp;
    double *tt = k->tt;
    double vj[6], t1[6], beta[6], Pi[36], a6[6], ag[6] = {0, 0, 0, 0, 0, 0};
    for (Py_ssize_t j = 0; j < nq; j++) {
        tt[j] = tau[j];
        if (!minv) tt[j] -= dofp[j] * (q[j] - dofp[2 * nq + j]) + dofp[nq + j] * qd[j];
    }
    memset(k->IA, 0, sizeof(double) * 36 * n);
    for (Py_ssize_t i = 0; i < n; i++) {
        node_kinematics(k, i, ext, q, qd);
        const int64_t *tp = k->topo + NTOPO * i;
        const int64_t p = tp[PARENT], k0 = tp[DOF0], nd = tp[NDOF];
        const double *g = k->geom + NGEOM * i, *Sb = k->Sb + 36 * i;
        double *V = k->V + 6 * i, *eta = k->eta + 6 * i, *IA = k->IA + 36 * i, *pA = k->pA + 6 * i;
        for (int r = 0; r < 6; r++) {
            double s = 0.0;
            for (int64_t m = 0; m < nd; m++) s += Sb[6 * r + m] * qd[k0 + m];
            vj[r] = s;
        }
        if (p >= 0) {
            x_mul(k->X + 36 * i, k->V + 6 * p, V);
            for (int r = 0; r < 6; r++) V[r] += vj[r];
        } else {
            for (int r = 0; r < 6; r++) V[r] = vj[r];
        }
        ad_mul(V, vj, eta);
        for (int r = 0; r < 6; r++) {
            eta[r] += k->c[6 * i + r];
            IA[7 * r] = g[INERTIA + r];
            t1[r] = g[INERTIA + r] * V[r];
        }
        adt_mul(V, t1, pA);
        for (int r = 0; r < 6; r++) {
            pA[r] = -pA[r];
            if (fext && !minv) pA[r] -= fext[6 * i + r];
        }
    }
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        const int64_t *tp = k->topo + NTOPO * i;
        const int64_t k0 = tp[DOF0], nd = tp[NDOF];
        const double *M = k->IA + 36 * i, *Sb = k->Sb + 36 * i, *eta = k->eta + 6 * i;
        double *U = k->U + 36 * i, *Dinv = k->Dinv + 36 * i, *u = k->u + 6 * i;
        for (int r = 0; r < 6; r++) {
            double s = k->pA[6 * i + r];
            for (int m = 0; m < 6; m++) s += M[6 * r + m] * eta[m];
            t1[r] = s;
        }
        if (nd == 0) {
            for (int r = 0; r < 6; r++) beta[r] = t1[r];
            memcpy(Pi, M, sizeof(double) * 36);
        } else {
            for (int64_t a = 0; a < nd; a++)
                for (int r = 0; r < 6; r++) {
                    double s = 0.0;
                    for (int m = 0; m < 6; m++) s += M[6 * r + m] * Sb[6 * m + a];
                    U[6 * r + a] = s;
                }
            if (nd == 1) {
                double d = dofp[3 * nq + k0];
                for (int r = 0; r < 6; r++) d += Sb[6 * r] * U[6 * r];
                Dinv[0] = 1.0 / d;
            } else {
                double D[36];
                for (int64_t a = 0; a < nd; a++)
                    for (int64_t b = 0; b < nd; b++) {
                        double s = 0.0;
                        for (int r = 0; r < 6; r++) s += Sb[6 * r + a] * U[6 * r + b];
                        D[6 * a + b] = s;
                    }
                for (int64_t a = 0; a < nd; a++) D[6 * a + a] += dofp[3 * nq + k0 + a];
                spd_inverse(D, (int)nd, Dinv);
            }
            for (int64_t a = 0; a < nd; a++) {
                double s = tt[k0 + a];
                for (int r = 0; r < 6; r++) s -= Sb[6 * r + a] * t1[r];
                u[a] = s;
            }
            for (int r = 0; r < 6; r++) beta[r] = t1[r];
            for (int64_t a = 0; a < nd; a++) {
                double s = 0.0;
                for (int64_t b = 0; b < nd; b++) s += Dinv[6 * a + b] * u[b];
                for (int r = 0; r < 6; r++) beta[r] += U[6 * r + a] * s;
            }
            for (int r = 0; r < 6; r++)
                for (int m = r; m < 6; m++) {
                    double s = M[6 * r + m];
                    for (int64_t a = 0; a < nd; a++) {
                        double ua = 0.0;
                        for (int64_t b = 0; b < nd; b++) ua += U[6 * r + b] * Dinv[6 * b + a];
                        s -= ua * U[6 * m + a];
                    }
                    Pi[6 * r + m] = s;
                    Pi[6 * m + r] = s;
                }
        }
        const int64_t p = tp[PARENT];
        if (p >= 0) {
            congruence_add(k->X + 36 * i, Pi, k->IA + 36 * p);
            xt_mul_add(k->X + 36 * i, beta, k->pA + 6 * p);
        }
    }
    if (!minv)
        for (int r = 0; r < 3; r++) ag[r + 3] = -k->geom[NGEOM * n + r];
    for (Py_ssize_t i = 0; i < n; i++) {
        const int64_t *tp = k->topo + NTOPO * i;
        const int64_t p = tp[PARENT], k0 = tp[DOF0], nd = tp[NDOF];
        const double *U = k->U + 36 * i, *Dinv = k->Dinv + 36 * i, *u = k->u + 6 * i;
        const double *Sb = k->Sb + 36 * i, *eta = k->eta + 6 * i;
        double *A = k->A + 6 * i;
        x_mul(k->X + 36 * i, p >= 0 ? k->A + 6 * p : ag, a6);
        for (int64_t a = 0; a < nd; a++) {
            double s = u[a];
            for (int r = 0; r < 6; r++) s -= U[6 * r + a] * a6[r];
            t1[a] = s;
        }
        for (int64_t a = 0; a < nd; a++) {
            double s = 0.0;
            for (int64_t b = 0; b < nd; b++) s += Dinv[6 * a + b] * t1[b];
            qdd[k0 + a] = s;
        }
        for (int r = 0; r < 6; r++) {
            double s = a6[r] + eta[r];
            for (int64_t a = 0; a < nd; a++) s += Sb[6 * r + a] * qdd[k0 + a];
            A[r] = s;
        }
    }
}

static void inverse_dynamics(Kernels *k, const double *ext, const double *q, const double *qd,
                             const double *qdd, const double *fext, double *tau)
{
    const Py_ssize_t n = k->n, nq = k->nq;
    double vj[6], t1[6], ag[6] = {0, 0, 0, 0, 0, 0};
    for (int r = 0; r < 3; r++) ag[r + 3] = -k->geom[NGEOM * n + r];
    for (Py_ssize_t i = 0; i < n; i++) {
        node_kinematics(k, i, ext, q, qd);
        const int64_t *tp = k->topo + NTOPO * i;
        const int64_t p = tp[PARENT], k0 = tp[DOF0], nd = tp[NDOF];
        const double *Sb = k->Sb + 36 * i, *c = k->c + 6 * i, *x = k->X + 36 * i;
        double *V = k->V + 6 * i, *A = k->A + 6 * i, *F = k->F + 6 * i;
        for (int r = 0; r < 6; r++) {
            double s = 0.0, sa = c[r];
            for (int64_t m = 0; m < nd; m++) {
                s += Sb[6 * r + m] * qd[k0 + m];
                sa += Sb[6 * r + m] * qdd[k0 + m];
            }
            vj[r] = s;
            t1[r] = sa;
        }
        if (p >= 0) {
            x_mul(x, k->V + 6 * p, V);
            x_mul(x, k->A + 6 * p, A);
        } else {
            for (int r = 0; r < 6; r++) V[r] = 0.0;
            x_mul(x, ag, A);
        }
        for (int r = 0; r < 6; r++) {
            V[r] += vj[r];
            A[r] += t1[r];
        }
        ad_mul(V, vj, t1);
        for (int r = 0; r < 6; r++) A[r] += t1[r];
        body_force(k->geom + NGEOM * i, V, A, F);
        if (fext)
            for (int r = 0; r < 6; r++) F[r] -= fext[6 * i + r];
    }
    for (Py_ssize_t i = n - 1; i > 0; i--) {
        const int64_t p = k->topo[NTOPO * i + PARENT];
        if (p >= 0) xt_mul_add(k->X + 36 * i, k->F + 6 * i, k->F + 6 * p);
    }
    const double *dofp = k->dofp;
    for (Py_ssize_t i = 0; i < n; i++) {
        const int64_t *tp = k->topo + NTOPO * i;
        const int64_t k0 = tp[DOF0], nd = tp[NDOF];
        const double *Sb = k->Sb + 36 * i, *F = k->F + 6 * i;
        for (int64_t a = 0; a < nd; a++) {
            double s = 0.0;
            for (int r = 0; r < 6; r++) s += Sb[6 * r + a] * F[r];
            const int64_t j = k0 + a;
            tau[j] = s + dofp[j] * (q[j] - dofp[2 * nq + j]) + dofp[nq + j] * qd[j];
            tau[j] += dofp[3 * nq + j] * qdd[j];
        }
    }
}

/* out += X^T I X for a spatial inertia in its 10 numbers (inertia_to_parent of _fast.py). */
static void inertia_to_parent(const double *x, const double *c, double *out)
{
    double t0 = x[30] * x[6] + x[31] * x[7] + x[32] * x[8];
    double t1 = x[18] * x[12] + x[19] * x[13] + x[20] * x[14];
    double t2 = x[24] * x[0] + x[25] * x[1] + x[26] * x[2];
    double h0 = c[6], h1 = c[7], h2 = c[8], m = c[9];
    double ht = h0 * t0 + h1 * t1 + h2 * t2;
    double tt = t0 * t0 + t1 * t1 + t2 * t2;
    double d = -2.0 * ht + m * tt;
    double k00 = c[0] + 2.0 * t0 * h0 - m * t0 * t0 + d;
    double k11 = c[1] + 2.0 * t1 * h1 - m * t1 * t1 + d;
    double k22 = c[2] + 2.0 * t2 * h2 - m * t2 * t2 + d;
    double k01 = c[3] + t0 * h1 + h0 * t1 - m * t0 * t1;
    double k02 = c[4] + t0 * h2 + h0 * t2 - m * t0 * t2;
    double k12 = c[5] + t1 * h2 + h1 * t2 - m * t1 * t2;
    double w[3][3];
    for (int j = 0; j < 3; j++) {
        double a0 = x[j], a1 = x[6 + j], a2 = x[12 + j];
        w[0][j] = k00 * a0 + k01 * a1 + k02 * a2;
        w[1][j] = k01 * a0 + k11 * a1 + k12 * a2;
        w[2][j] = k02 * a0 + k12 * a1 + k22 * a2;
    }
    out[0] += x[0] * w[0][0] + x[6] * w[1][0] + x[12] * w[2][0];
    out[1] += x[1] * w[0][1] + x[7] * w[1][1] + x[13] * w[2][1];
    out[2] += x[2] * w[0][2] + x[8] * w[1][2] + x[14] * w[2][2];
    out[3] += x[0] * w[0][1] + x[6] * w[1][1] + x[12] * w[2][1];
    out[4] += x[0] * w[0][2] + x[6] * w[1][2] + x[12] * w[2][2];
    out[5] += x[1] * w[0][2] + x[7] * w[1][2] + x[13] * w[2][2];
    double g0 = h0 - m * t0, g1 = h1 - m * t1, g2 = h2 - m * t2;
    out[6] += x[0] * g0 + x[6] * g1 + x[12] * g2;
    out[7] += x[1] * g0 + x[7] * g1 + x[13] * g2;
    out[8] += x[2] * g0 + x[8] * g1 + x[14] * g2;
    out[9] += m;
}

/* Column of a one-coordinate node i: walk f = Ic_i Sb_i up to the root (scalars in registers). */
static void crba_column(const Kernels *k, double *restrict M, Py_ssize_t i, const double *f)
{
    const Py_ssize_t nq = k->nq;
    const int64_t k0 = k->topo[NTOPO * i + DOF0];
    double f0 = f[0], f1 = f[1], f2 = f[2], f3 = f[3], f4 = f[4], f5 = f[5];
    int64_t j = i;
    while (j >= 0) {
        const int64_t *tj = k->topo + NTOPO * j;
        const int64_t j0 = tj[DOF0], jd = tj[NDOF];
        const double *S = k->Sb + 36 * j;
        for (int64_t b = 0; b < jd; b++) {
            double s = S[b] * f0 + S[6 + b] * f1 + S[12 + b] * f2 + S[18 + b] * f3 + S[24 + b] * f4 +
                       S[30 + b] * f5;
            M[(j0 + b) * nq + k0] = s;
            M[k0 * nq + j0 + b] = s;
        }
        const int64_t p = tj[PARENT];
        if (p >= 0) {
            const double *x = k->X + 36 * j;
            double g0 = x[0] * f0 + x[6] * f1 + x[12] * f2 + x[18] * f3 + x[24] * f4 + x[30] * f5;
            double g1 = x[1] * f0 + x[7] * f1 + x[13] * f2 + x[19] * f3 + x[25] * f4 + x[31] * f5;
            double g2 = x[2] * f0 + x[8] * f1 + x[14] * f2 + x[20] * f3 + x[26] * f4 + x[32] * f5;
            double g3 = x[0] * f3 + x[6] * f4 + x[12] * f5;
            double g4 = x[1] * f3 + x[7] * f4 + x[13] * f5;
            double g5 = x[2] * f3 + x[8] * f4 + x[14] * f5;
            f0 = g0; f1 = g1; f2 = g2; f3 = g3; f4 = g4; f5 = g5;
        }
        j = p;
    }
}

static void mass_matrix(Kernels *k, const double *ext, const double *q, double *M)
{
    const Py_ssize_t n = k->n, nq = k->nq;
    double *Ic = k->Ic;
    double Fc[6][6], Fn[6][6];
    memset(Ic, 0, sizeof(double) * 10 * n);
    memset(M, 0, sizeof(double) * nq * nq);
    for (Py_ssize_t i = 0; i < n; i++) {
        node_kinematics(k, i, ext, q, k->zeros);
        const double *g = k->geom + NGEOM * i;
        Ic[10 * i] = g[INERTIA];
        Ic[10 * i + 1] = g[INERTIA + 1];
        Ic[10 * i + 2] = g[INERTIA + 2];
        Ic[10 * i + 9] = g[INERTIA + 3];
    }
    for (Py_ssize_t i = n - 1; i > 0; i--) {
        const int64_t p = k->topo[NTOPO * i + PARENT];
        if (p >= 0) inertia_to_parent(k->X + 36 * i, Ic + 10 * i, Ic + 10 * p);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const int64_t *tp = k->topo + NTOPO * i;
        const int64_t k0 = tp[DOF0], nd = tp[NDOF];
        if (nd == 0) continue;
        const double *ci = Ic + 10 * i, *Sb = k->Sb + 36 * i;
        for (int64_t a = 0; a < nd; a++) {
            double w0 = Sb[a], w1 = Sb[6 + a], w2 = Sb[12 + a];
            double v0 = Sb[18 + a], v1 = Sb[24 + a], v2 = Sb[30 + a];
            Fc[a][0] = ci[0] * w0 + ci[3] * w1 + ci[4] * w2 + ci[7] * v2 - ci[8] * v1;
            Fc[a][1] = ci[3] * w0 + ci[1] * w1 + ci[5] * w2 + ci[8] * v0 - ci[6] * v2;
            Fc[a][2] = ci[4] * w0 + ci[5] * w1 + ci[2] * w2 + ci[6] * v1 - ci[7] * v0;
            Fc[a][3] = w1 * ci[8] - w2 * ci[7] + ci[9] * v0;
            Fc[a][4] = w2 * ci[6] - w0 * ci[8] + ci[9] * v1;
            Fc[a][5] = w0 * ci[7] - w1 * ci[6] + ci[9] * v2;
        }
        if (nd == 1) {
            crba_column(k, M, i, Fc[0]);
            continue;
        }
        /* walk Fc = (X ... X)^T Ic_i Sb_i up to the root */
        int64_t j = i;
        while (j >= 0) {
            const int64_t *tj = k->topo + NTOPO * j;
            const int64_t j0 = tj[DOF0], jd = tj[NDOF];
            const double *S = k->Sb + 36 * j;
            for (int64_t b = 0; b < jd; b++)
                for (int64_t a = 0; a < nd; a++) {
                    const double *f = Fc[a];
                    double s = S[b] * f[0] + S[6 + b] * f[1] + S[12 + b] * f[2] + S[18 + b] * f[3] +
                               S[24 + b] * f[4] + S[30 + b] * f[5];
                    M[(j0 + b) * nq + k0 + a] = s;
                    M[(k0 + a) * nq + j0 + b] = s;
                }
            const int64_t p = tj[PARENT];
            if (p >= 0) {
                const double *x = k->X + 36 * j;
                for (int64_t a = 0; a < nd; a++) {
                    for (int r = 0; r < 6; r++) Fn[a][r] = 0.0;
                    xt_mul_add(x, Fc[a], Fn[a]);
                    for (int r = 0; r < 6; r++) Fc[a][r] = Fn[a][r];
                }
            }
            j = p;
        }
    }
    for (Py_ssize_t j = 0; j < nq; j++) M[j * nq + j] += k->dofp[3 * nq + j];
}

/* ---------------------------------------------------------------- Python glue */

/* A C-contiguous float64 array with `ndim` dimensions of the given sizes (-1: any). */
static int check_array(PyObject *o, int ndim, Py_ssize_t d0, Py_ssize_t d1, int writeable, const char *name)
{
    if (!PyArray_Check(o)) goto bad;
    PyArrayObject *a = (PyArrayObject *)o;
    if (PyArray_TYPE(a) != NPY_DOUBLE || PyArray_NDIM(a) != ndim || !PyArray_IS_C_CONTIGUOUS(a)) goto bad;
    if (d0 >= 0 && PyArray_DIM(a, 0) != d0) goto bad;
    if (ndim > 1 && d1 >= 0 && PyArray_DIM(a, 1) != d1) goto bad;
    if (writeable && !PyArray_ISWRITEABLE(a)) goto bad;
    return 1;
bad:
    if (ndim == 1)
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous float64 array of shape (%zd,)", name, d0);
    else
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous float64 array of shape (%zd, %zd)", name, d0, d1);
    return 0;
}

static const double *vector_arg(Kernels *k, PyObject *o, const char *name)
{
    if (!check_array(o, 1, k->nq, -1, 0, name)) return NULL;
    return (const double *)PyArray_DATA((PyArrayObject *)o);
}

/* ext: (m, 88) or None when the model has no OTHER node; fext: (n, 6) or None. */
static int optional_args(Kernels *k, PyObject *ext_o, PyObject *fext_o, const double **ext, const double **fext)
{
    *ext = NULL;
    if (fext) *fext = NULL;
    if (k->m > 0) {
        if (!check_array(ext_o, 2, k->m, NEXT, 0, "ext")) return 0;
        *ext = (const double *)PyArray_DATA((PyArrayObject *)ext_o);
    }
    if (fext && fext_o != Py_None) {
        if (PyArray_Check(fext_o) && PyArray_NDIM((PyArrayObject *)fext_o) == 2 &&
            PyArray_DIM((PyArrayObject *)fext_o, 0) == 0)
            return 1;
        if (!check_array(fext_o, 2, k->n, 6, 0, "wrenches")) return 0;
        *fext = (const double *)PyArray_DATA((PyArrayObject *)fext_o);
    }
    return 1;
}

static PyObject *output(PyObject *out, int ndim, Py_ssize_t nq)
{
    if (out == NULL || out == Py_None) {
        npy_intp dims[2] = {nq, nq};
        return PyArray_SimpleNew(ndim, dims, NPY_DOUBLE);
    }
    if (!check_array(out, ndim, nq, nq, 1, "out")) return NULL;
    Py_INCREF(out);
    return out;
}

static PyObject *Kernels_forward_dynamics(Kernels *self, PyObject *const *args, Py_ssize_t nargs)
{
    /* (q, qdot, tau, ext, wrenches, minv[, out]) */
    if (nargs < 6 || nargs > 7) {
        PyErr_SetString(PyExc_TypeError, "forward_dynamics(q, qdot, tau, ext, wrenches, minv, out=None)");
        return NULL;
    }
    const double *q, *qd, *tau, *ext, *fext;
    if (!(q = vector_arg(self, args[0], "q")) || !(qd = vector_arg(self, args[1], "qdot")) ||
        !(tau = vector_arg(self, args[2], "tau")) || !optional_args(self, args[3], args[4], &ext, &fext))
        return NULL;
    int minv = PyObject_IsTrue(args[5]);
    if (minv < 0) return NULL;
    PyObject *out = output(nargs > 6 ? args[6] : NULL, 1, self->nq);
    if (!out) return NULL;
    forward_dynamics(self, ext, q, qd, tau, fext, minv, (double *)PyArray_DATA((PyArrayObject *)out));
    return out;
}

static PyObject *Kernels_inverse_dynamics(Kernels *self, PyObject *const *args, Py_ssize_t nargs)
{
    /* (q, qdot, qddot, ext, wrenches[, out]) */
    if (nargs < 5 || nargs > 6) {
        PyErr_SetString(PyExc_TypeError, "inverse_dynamics(q, qdot, qddot, ext, wrenches, out=None)");
        return NULL;
    }
    const double *q, *qd, *qdd, *ext, *fext;
    if (!(q = vector_arg(self, args[0], "q")) || !(qd = vector_arg(self, args[1], "qdot")) ||
        !(qdd = vector_arg(self, args[2], "qddot")) || !optional_args(self, args[3], args[4], &ext, &fext))
        return NULL;
    PyObject *out = output(nargs > 5 ? args[5] : NULL, 1, self->nq);
    if (!out) return NULL;
    inverse_dynamics(self, ext, q, qd, qdd, fext, (double *)PyArray_DATA((PyArrayObject *)out));
    return out;
}

static PyObject *Kernels_mass_matrix(Kernels *self, PyObject *const *args, Py_ssize_t nargs)
{
    /* (q, ext[, out]) */
    if (nargs < 2 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "mass_matrix(q, ext, out=None)");
        return NULL;
    }
    const double *q, *ext;
    if (!(q = vector_arg(self, args[0], "q")) || !optional_args(self, args[1], NULL, &ext, NULL)) return NULL;
    PyObject *out = output(nargs > 2 ? args[2] : NULL, 2, self->nq);
    if (!out) return NULL;
    mass_matrix(self, ext, q, (double *)PyArray_DATA((PyArrayObject *)out));
    return out;
}

static int Kernels_init(Kernels *self, PyObject *args, PyObject *kwds)
{
    PyObject *topo, *geom, *dofp;
    Py_ssize_t m;
    static char *kwlist[] = {"topo", "geom", "dofp", "n_other", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOn", kwlist, &topo, &geom, &dofp, &m)) return -1;
    if (!PyArray_Check(topo) || PyArray_TYPE((PyArrayObject *)topo) != NPY_INT64 ||
        PyArray_NDIM((PyArrayObject *)topo) != 2 || PyArray_DIM((PyArrayObject *)topo, 1) != NTOPO ||
        !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)topo)) {
        PyErr_SetString(PyExc_TypeError, "topo must be a contiguous int64 array of shape (n, 6)");
        return -1;
    }
    Py_ssize_t n = PyArray_DIM((PyArrayObject *)topo, 0);
    if (!check_array(geom, 2, n + 1, NGEOM, 0, "geom")) return -1;
    if (!PyArray_Check(dofp) || PyArray_NDIM((PyArrayObject *)dofp) != 2) {
        PyErr_SetString(PyExc_TypeError, "dofp must be a float64 array of shape (4, nq)");
        return -1;
    }
    Py_ssize_t nq = PyArray_DIM((PyArrayObject *)dofp, 1);
    if (!check_array(dofp, 2, 4, nq, 0, "dofp")) return -1;
    const int64_t *t = (const int64_t *)PyArray_DATA((PyArrayObject *)topo);
    for (Py_ssize_t i = 0; i < n; i++) {
        const int64_t *tp = t + NTOPO * i;
        if (tp[PARENT] >= i || tp[KIND] < FIXED || tp[KIND] > OTHER || tp[NDOF] < 0 || tp[NDOF] > 6 ||
            tp[DOF0] < 0 || tp[DOF0] + tp[NDOF] > nq || (tp[KIND] == OTHER && (tp[EXT] < 0 || tp[EXT] >= m))) {
            PyErr_Format(PyExc_ValueError, "topo row %zd is not a valid node of a tree in depth-first order", i);
            return -1;
        }
    }
    Py_ssize_t size = n * (36 * 5 + 6 * 8 + 10) + 2 * nq + 1;
    double *w = PyMem_Calloc((size_t)size, sizeof(double));
    if (!w) {
        PyErr_NoMemory();
        return -1;
    }
    PyMem_Free(self->work);
    Py_XSETREF(self->topo_obj, Py_NewRef(topo));
    Py_XSETREF(self->geom_obj, Py_NewRef(geom));
    Py_XSETREF(self->dofp_obj, Py_NewRef(dofp));
    self->topo = t;
    self->geom = (const double *)PyArray_DATA((PyArrayObject *)geom);
    self->dofp = (const double *)PyArray_DATA((PyArrayObject *)dofp);
    self->n = n;
    self->nq = nq;
    self->m = m;
    self->work = w;
    self->X = w; w += 36 * n;
    self->Sb = w; w += 36 * n;
    self->IA = w; w += 36 * n;
    self->U = w; w += 36 * n;
    self->Dinv = w; w += 36 * n;
    self->c = w; w += 6 * n;
    self->V = w; w += 6 * n;
    self->eta = w; w += 6 * n;
    self->pA = w; w += 6 * n;
    self->u = w; w += 6 * n;
    self->A = w; w += 6 * n;
    self->F = w; w += 6 * n;
    w += 6 * n; /* spare */
    self->Ic = w; w += 10 * n;
    self->tt = w; w += nq;
    self->zeros = w;
    return 0;
}

static void Kernels_dealloc(Kernels *self)
{
    Py_XDECREF(self->topo_obj);
    Py_XDECREF(self->geom_obj);
    Py_XDECREF(self->dofp_obj);
    PyMem_Free(self->work);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Kernels_methods[] = {
    {"forward_dynamics", (PyCFunction)(void (*)(void))Kernels_forward_dynamics, METH_FASTCALL,
     "forward_dynamics(q, qdot, tau, ext, wrenches, minv, out=None): qddot by the articulated-body "
     "recursion (M^{-1} tau when minv)."},
    {"inverse_dynamics", (PyCFunction)(void (*)(void))Kernels_inverse_dynamics, METH_FASTCALL,
     "inverse_dynamics(q, qdot, qddot, ext, wrenches, out=None): applied joint forces (Newton-Euler)."},
    {"mass_matrix", (PyCFunction)(void (*)(void))Kernels_mass_matrix, METH_FASTCALL,
     "mass_matrix(q, ext, out=None): M by the composite-rigid-body algorithm."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject KernelsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "contactlab.reduced._cfast.Kernels",
    .tp_basicsize = sizeof(Kernels),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Kernels(topo, geom, dofp, n_other): compiled recursions over a prepared model's arrays.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Kernels_init,
    .tp_dealloc = (destructor)Kernels_dealloc,
    .tp_methods = Kernels_methods,
};

static struct PyModuleDef cfast_module = {
    PyModuleDef_HEAD_INIT, "_cfast",
    "Forward dynamics, inverse dynamics and mass matrix compiled when the package is built.", -1, NULL,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cfast(void)
{
    import_array();
    if (PyType_Ready(&KernelsType) < 0) return NULL;
    PyObject *mod = PyModule_Create(&cfast_module);
    if (!mod) return NULL;
#ifndef CFAST_SOURCE_SHA256
#define CFAST_SOURCE_SHA256 ""
#endif
    if (PyModule_AddStringConstant(mod, "SOURCE_SHA256", CFAST_SOURCE_SHA256) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    Py_INCREF(&KernelsType);
    if (PyModule_AddObject(mod, "Kernels", (PyObject *)&KernelsType) < 0) {
        Py_DECREF(&KernelsType);
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
