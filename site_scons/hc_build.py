"""Build helpers for hc: compiler flags, Configure checks, plugin and
kernel-embedding builders, and the test/bench aliases."""
import os
import subprocess
from SCons.Script import (Configure, Dir, File, Builder, Action, AlwaysBuild,
                          Alias, Exit)

HC_VERSION = '0.1.0'
HC_SOVERSION = '0'


def _flags(env):
    mode = env['mode']
    env.Append(CCFLAGS=['-Wall', '-Wextra', '-Wshadow',
                        '-fvisibility=hidden', '-pthread', '-g'],
               CFLAGS=['-std=c11'],
               CPPDEFINES=[('_GNU_SOURCE', 1)],
               LINKFLAGS=['-pthread'],
               CPPPATH=['#include', os.path.join('#' + env['builddir'], 'config')])
    if mode == 'debug':
        env.Append(CCFLAGS=['-O0'])
    else:
        env.Append(CCFLAGS=['-O3'], CPPDEFINES=['NDEBUG'])
    if env['march']:
        env.Append(CCFLAGS=['-march=' + env['march']])
    san = [s.strip() for s in env['sanitize'].split(',') if s.strip()]
    for s in san:
        if s not in ('address', 'undefined', 'thread', 'leak'):
            print('scons: sanitize=%s: unknown sanitizer (address, undefined, thread, leak)' % s)
            Exit(2)
    if 'thread' in san and 'address' in san:
        print('scons: sanitize: thread cannot be combined with address')
        Exit(2)
    if san:
        f = ['-fsanitize=' + ','.join(san), '-fno-omit-frame-pointer']
        if 'undefined' in san:
            f.append('-fno-sanitize-recover=undefined')
        env.Append(CCFLAGS=f, LINKFLAGS=f)
    env['HC_SANITIZE'] = san


def _mpi_flags(env):
    """The compile and link flags of the MPI that env['mpicc'] wraps (Open
    MPI's --showme, MPICH's -compile_info/-link_info), in
    env['HC_MPI_FLAGS']; False when there is none."""
    mpicc = env['mpicc']
    for compile_, link in (('--showme:compile', '--showme:link'), ('-compile_info', '-link_info')):
        try:
            c = subprocess.run([mpicc, compile_], capture_output=True, text=True, timeout=30)
            l = subprocess.run([mpicc, link], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return False
        if c.returncode == 0 and l.returncode == 0:
            # MPICH prints the compiler first: keep the flags only.
            words = [w for w in (c.stdout + ' ' + l.stdout).split() if w.startswith('-')]
            env['HC_MPI_FLAGS'] = ' '.join(words)
            return True
    return False


def configure(env):
    _flags(env)
    build = env['builddir']
    cuda = env['CUDA_PATH']
    conf = Configure(env, config_h=os.path.join(build, 'config', 'hc_config.h'),
                     conf_dir=os.path.join(build, '.sconf_temp'),
                     log_file=os.path.join(build, 'config.log'))
    have = {}
    if not conf.CheckLibWithHeader('ltdl', 'ltdl.h', 'c', autoadd=0):
        print('scons: libltdl is required (apt-get install libltdl-dev)')
        Exit(2)
    if not conf.CheckLibWithHeader('jansson', 'jansson.h', 'c', autoadd=0):
        print('scons: jansson is required for hcrun (apt-get install libjansson-dev)')
        Exit(2)
    have['opencl'] = conf.CheckLibWithHeader('OpenCL', 'CL/cl.h', 'c', autoadd=0,
                                             call='clGetPlatformIDs(0, 0, 0);')
    have['cunit'] = conf.CheckLibWithHeader('cunit', 'CUnit/Basic.h', 'c', autoadd=0)
    have['png'] = conf.CheckLibWithHeader('png', 'png.h', 'c', autoadd=0)
    have['cuda'] = (os.path.exists(os.path.join(cuda, 'include', 'cuda.h')) and
                    os.path.exists(os.path.join(cuda, 'include', 'nvrtc.h')))
    have['mpi'] = _mpi_flags(env)
    for k in ('opencl', 'cunit', 'png', 'cuda', 'mpi'):
        conf.Define('HC_HAVE_' + k.upper(), 1 if have[k] else 0)
    prefix = os.path.abspath(env['PREFIX'])
    conf.Define('HC_INSTALL_PLUGIN_DIR', '"%s"' % os.path.join(prefix, 'lib', 'hc', 'plugins'))
    conf.Define('HC_CUDA_PATH', '"%s"' % cuda)
    env = conf.Finish()
    if not have['opencl']:
        print('scons: OpenCL ICD loader not found: skipping plugins/opencl (apt-get install ocl-icd-opencl-dev opencl-c-headers)')
    if not have['cuda']:
        print('scons: CUDA toolkit not found under %s: skipping plugins/cuda' % cuda)
    if not have['mpi']:
        print('scons: MPI not found (%s): skipping libhc-mpi; hcrun runs as one process '
              '(apt-get install libopenmpi-dev openmpi-bin)' % env['mpicc'])
    if not have['cunit']:
        print('scons: CUnit not found: tests are not built (apt-get install libcunit1-dev)')
    env['HC_HAVE'] = have
    env['HC_LIBDIR'] = Dir(os.path.join('#' + build, 'lib'))
    env['HC_BINDIR'] = Dir(os.path.join('#' + build, 'bin'))
    env['HC_PLUGINDIR'] = Dir(os.path.join('#' + build, 'lib', 'hc', 'plugins'))
    env['HC_VERSION'] = HC_VERSION
    env['HC_SOVERSION'] = HC_SOVERSION


def _embed_text(target, source, env):
    """Turns a kernel source file into a C file holding it as a string."""
    sym = env['EMBED_SYMBOL']
    with open(source[0].srcnode().abspath, 'r') as f:
        text = f.read()
    out = ['/* generated from %s: do not edit */' % os.path.basename(str(source[0])),
           'const char %s[] =' % sym]
    for line in text.splitlines(True):
        esc = line.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')
        out.append('  "%s"' % esc)
    out.append('  "";\n')
    with open(str(target[0]), 'w') as f:
        f.write('\n'.join(out))


def add_methods(env):
    def embed(env, target, source, symbol):
        return env.Command(target, source,
                           Action(_embed_text, 'embed $SOURCE -> $TARGET'),
                           EMBED_SYMBOL=symbol)

    def plugin(env, name, sources, **kw):
        """A plugin as an outside author builds it: public headers, libhc."""
        e = env.Clone()
        libs = kw.pop('LIBS', [])
        if 'hc-grid' in libs:
            # libhc-grid is not loaded by the host: the plugin finds it in
            # the lib/ two levels above lib/hc/plugins, in the build tree
            # and in an install alike.
            kw.setdefault('RPATH', []).append(e.Literal('\\$$ORIGIN/../..'))
        e.Append(LIBS=libs + ['hc'], LIBPATH=[env['HC_LIBDIR']],
                 LINKFLAGS=['-Wl,-z,defs'], **kw)
        mod = e.LoadableModule(os.path.join(env['HC_PLUGINDIR'].abspath, name), sources,
                               LDMODULEPREFIX='', LDMODULESUFFIX='.so')
        env.Alias('plugins', mod)
        env.Install('$PREFIX/lib/hc/plugins', mod)
        env.Alias('install', '$PREFIX/lib/hc/plugins')
        return mod

    def program(env, name, sources, **kw):
        """A program in build/bin (or a folder below it) that finds libhc in
        build/lib through one RUNPATH entry relative to itself. Installed
        programs keep it, so it must name the install's own lib/ and nothing
        above it (tests/install_check.sh checks every installed ELF)."""
        e = env.Clone()
        target = os.path.join(env['HC_BINDIR'].abspath, name)
        rel = os.path.relpath(env['HC_LIBDIR'].abspath, os.path.dirname(target))
        e.Append(LIBS=['hc'] + kw.pop('LIBS', []), LIBPATH=[env['HC_LIBDIR']],
                 RPATH=[e.Literal('\\$$ORIGIN/' + rel)], **kw)
        return e.Program(target, sources)

    env.AddMethod(embed, 'HcEmbed')
    env.AddMethod(plugin, 'HcPlugin')
    env.AddMethod(program, 'HcProgram')
